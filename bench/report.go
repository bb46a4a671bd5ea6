package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// unit says how a row's values read.
const (
	unitSeconds = "s"
	unitBytes   = "bytes"
)

// row is one comparison: snap's value against one peer's.
type row struct {
	Workload string  `json:"workload"`
	Name     string  `json:"row"`
	Unit     string  `json:"unit"`
	Snap     float64 `json:"snap"`
	Peer     string  `json:"peer,omitempty"`       // what the peer ran, e.g. "git add -A + commit"
	PeerVal  float64 `json:"peer_value,omitempty"` // 0 when there is no peer
	Ratio    float64 `json:"ratio,omitempty"`      // snap / peer
	// Target is either a ratio bound (TargetRatio, snap/peer ≤ it) or an
	// absolute bound on snap's value (TargetAbs, snap < it).
	TargetRatio float64 `json:"target_ratio,omitempty"`
	TargetAbs   float64 `json:"target_abs,omitempty"`
	Met         *bool   `json:"met,omitempty"`
	Skipped     string  `json:"skipped,omitempty"`
	Note        string  `json:"note,omitempty"`
}

// report collects rows and notes for printing.
type report struct {
	Machine map[string]string `json:"machine"`
	Config  map[string]any    `json:"config"`
	Rows    []row             `json:"rows"`
	Notes   []string          `json:"notes"`
	Errors  []string          `json:"errors,omitempty"`
}

// add appends a row, computing its ratio and whether the target is met.
func (r *report) add(x row) {
	if x.Skipped == "" && x.PeerVal > 0 {
		x.Ratio = x.Snap / x.PeerVal
	}
	if x.Skipped == "" {
		switch {
		case x.TargetRatio > 0 && x.Ratio > 0:
			met := x.Ratio <= x.TargetRatio
			x.Met = &met
		case x.TargetAbs > 0:
			met := x.Snap < x.TargetAbs
			x.Met = &met
		}
	}
	r.Rows = append(r.Rows, x)
}

// timeRow adds a row of durations.
func (r *report) timeRow(w, name string, snap time.Duration, peer string, peerVal time.Duration, target float64, note string) {
	r.add(row{Workload: w, Name: name, Unit: unitSeconds, Snap: snap.Seconds(), Peer: peer, PeerVal: peerVal.Seconds(), TargetRatio: target, Note: note})
}

// bytesRow adds a row of sizes.
func (r *report) bytesRow(w, name string, snap int64, peer string, peerVal int64, target float64, note string) {
	r.add(row{Workload: w, Name: name, Unit: unitBytes, Snap: float64(snap), Peer: peer, PeerVal: float64(peerVal), TargetRatio: target, Note: note})
}

// skip adds a row that could not be measured.
func (r *report) skip(w, name, peer, why string) {
	r.add(row{Workload: w, Name: name, Peer: peer, Skipped: why})
}

func (r *report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeMarkdown prints the table, then the notes.
func (r *report) writeMarkdown(w io.Writer) {
	fmt.Fprintln(w, "| workload | measurement | snap | peer | peer value | snap/peer | target | met |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---|")
	for _, x := range r.Rows {
		if x.Skipped != "" {
			fmt.Fprintf(w, "| %s | %s | — | %s | — | — | | skipped: %s |\n", x.Workload, x.Name, x.Peer, x.Skipped)
			continue
		}
		peerVal, ratio := "", ""
		if x.PeerVal > 0 {
			peerVal = formatValue(x.Unit, x.PeerVal)
			ratio = fmt.Sprintf("%.2fx", x.Ratio)
		}
		target, met := "", ""
		switch {
		case x.TargetRatio > 0:
			target = fmt.Sprintf("≤ %.2fx", x.TargetRatio)
		case x.TargetAbs > 0:
			target = "< " + formatValue(x.Unit, x.TargetAbs)
		}
		if x.Met != nil {
			met = "missed"
			if *x.Met {
				met = "met"
			}
		}
		name := x.Name
		if x.Note != "" {
			name += " (" + x.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Workload, name, formatValue(x.Unit, x.Snap), x.Peer, peerVal, ratio, target, met)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(w)
		for _, e := range r.Errors {
			fmt.Fprintln(w, "- ERROR: "+e)
		}
	}
}

func formatValue(unit string, v float64) string {
	switch unit {
	case unitSeconds:
		switch {
		case v >= 10:
			return fmt.Sprintf("%.1f s", v)
		case v >= 1:
			return fmt.Sprintf("%.2f s", v)
		default:
			return fmt.Sprintf("%.1f ms", v*1000)
		}
	case unitBytes:
		return formatBytes(v)
	}
	return fmt.Sprint(v)
}

func formatBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

// ---- statistics ----

// median is the middle value of ds (the mean of the two middle ones when
// their number is even).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank percentile p (0–100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	if k < 0 {
		k = 0
	}
	return s[k]
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// hasRow reports whether the report has a row with this workload and name
// (measured or skipped).
func (r *report) hasRow(w, name string) bool {
	for _, x := range r.Rows {
		if x.Workload == w && strings.HasPrefix(x.Name, name) {
			return true
		}
	}
	return false
}

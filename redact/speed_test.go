package redact

import (
	"os"
	"testing"
	"time"
)

// TestScanSpeedFile measures Scan on the file named by
// SNAP_REDACT_SPEED_FILE (skipped without it), e.g.
//
//	SNAP_REDACT_SPEED_FILE=/tmp/bench100.jsonl go test ./redact -run ScanSpeedFile -v
func TestScanSpeedFile(t *testing.T) {
	name := os.Getenv("SNAP_REDACT_SPEED_FILE")
	if name == "" {
		t.Skip("SNAP_REDACT_SPEED_FILE not set")
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	rep, err := Scan(f)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("%d bytes in %v (%.1f MB/s), %d findings", rep.Size, d, float64(rep.Size)/d.Seconds()/1e6, len(rep.Findings))
}

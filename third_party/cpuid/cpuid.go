// Package cpuid stands in for github.com/klauspost/cpuid/v2 in snap's
// builds (go.mod's replace directive), with only what
// github.com/zeebo/blake3 asks of it: whether the CPU has AVX2 and SSE4.1.
// The real package identifies every feature of the CPU when a process
// starts, which costs about 0.5 ms where CPUID traps to a hypervisor, and
// every snap process (each hook event) paid it. golang.org/x/sys/cpu
// answers the two questions, including whether the OS saves the AVX
// registers, in a tenth of that. Builds that ignore the replace directive
// (go install ...@version) use the real package, which answers alike.
package cpuid

import "golang.org/x/sys/cpu"

// FeatureID is a CPU feature.
type FeatureID int

const (
	// AVX2 is the AVX2 instruction set (and the OS saving its registers).
	AVX2 FeatureID = iota + 1
	// SSE4 is SSE4.1.
	SSE4
)

// CPUInfo answers Has.
type CPUInfo struct{}

// CPU is the processor the program runs on.
var CPU CPUInfo

// Has reports whether the CPU has feature id.
func (CPUInfo) Has(id FeatureID) bool {
	switch id {
	case AVX2:
		return cpu.X86.HasAVX2
	case SSE4:
		return cpu.X86.HasSSE41
	}
	return false
}

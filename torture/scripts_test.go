package torture

import (
	"os/exec"
	"testing"
)

// TestAgentWorkflowScript runs scripts/agent-workflow.sh, the end-to-end
// scenario of the README (nested tasks, staged edits chosen by letter, an
// atomic commit, a revert undone, compaction, a context retry, a
// checkpoint's change reverted), against the built binary; the script
// checks every step itself.
func TestAgentWorkflowScript(t *testing.T) {
	cmd := exec.Command("bash", "../scripts/agent-workflow.sh", snapBin)
	cmd.Env = snapEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agent-workflow.sh: %v\n%s", err, out)
	}
}

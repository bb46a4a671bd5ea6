//go:build ignore

// gen_gitleaks copies gitleaks' default rule set (config/gitleaks.toml)
// and its licence (LICENSE) from the gitleaks module go.mod pins to
// gitleaks.toml and LICENSE.gitleaks: go generate ./redact, after moving
// the pin (go get github.com/zricethezav/gitleaks/v8@VERSION).
package main

import (
	"encoding/json"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		log.Fatalf("go mod download: %v", err)
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		log.Fatalf("go mod download: %v %s", err, out)
	}
	for from, to := range map[string]string{"config/gitleaks.toml": "gitleaks.toml", "LICENSE": "LICENSE.gitleaks"} {
		b, err := os.ReadFile(filepath.Join(m.Dir, from))
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("gitleaks %s: gitleaks.toml, LICENSE.gitleaks", m.Version)
}

// Package all links every agent adapter snap ships into a program: each
// adapter package registers itself with the agent registry in its init,
// and importing this package (blank, as cmd/snap does) imports them all.
//
// Adding an agent is one package under agent/ whose init calls
// agent.Register, and one line here (docs/EXTENDING.md, "An agent
// adapter"). The registry cannot import the adapters itself: they import
// agent (Event, HookSpec, Hook), so agent importing them would be a cycle.
package all

import (
	_ "github.com/snapcore-dev/snap/agent/claudecode"
	_ "github.com/snapcore-dev/snap/agent/codex"
	_ "github.com/snapcore-dev/snap/agent/gemini"
)

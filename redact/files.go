package redact

import (
	"path"
	"strings"
)

// SecretFilePatterns are the file names (matched against a path's last
// element, path.Match syntax) that mark a file as holding secrets.
var SecretFilePatterns = []string{
	".env*", "*.env",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	"credentials*.json", "*-credentials.json", "service-account*.json",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
	".pgpass", "*.tfstate", "*.tfstate.backup", "*.tfvars", "secrets.y*ml", "*.secrets.y*ml",
	".dockercfg", "*.ovpn", "*.keytab",
}

// secretPaths are the paths (matched against a path's last two elements)
// that hold secrets whatever their name alone says: cloud CLIs' credential
// files.
var secretPaths = []string{".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config", "gcloud/credentials.db"}

// SecretFileName reports whether a file's name marks it as holding secrets,
// and the pattern that says so. A public key (*.pub) never does.
// Names are compared without regard to case (.ENV, server.PEM, ID_RSA are
// the same files to a person, and to case-folding file systems).
func SecretFileName(p string) (string, bool) {
	p = strings.ToLower(p)
	name := path.Base(p)
	if strings.HasSuffix(name, ".pub") {
		return "", false
	}
	for _, pat := range SecretFilePatterns {
		if ok, _ := path.Match(pat, name); ok {
			return pat, true
		}
	}
	for _, sp := range secretPaths {
		if p == sp || strings.HasSuffix(p, "/"+sp) {
			return sp, true
		}
	}
	return "", false
}

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
}

// SecretFileName reports whether a file's name marks it as holding secrets,
// and the pattern that says so. A public key (*.pub) never does.
func SecretFileName(p string) (string, bool) {
	name := path.Base(p)
	if strings.HasSuffix(name, ".pub") {
		return "", false
	}
	for _, pat := range SecretFilePatterns {
		if ok, _ := path.Match(pat, name); ok {
			return pat, true
		}
	}
	return "", false
}

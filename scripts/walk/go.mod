module github.com/snapcore-dev/snap/scripts/walk

go 1.26

require golang.org/x/tools v0.30.0

require (
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
)

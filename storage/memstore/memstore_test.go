package memstore

import (
	"testing"

	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/storage/storagetest"
)

func TestBlobsConformance(t *testing.T) {
	storagetest.RunBlobs(t, func(*testing.T) storage.Blobs { return NewBlobs() })
}

func TestRefsConformance(t *testing.T) {
	storagetest.RunRefs(t, func(*testing.T) storage.Refs { return NewRefs() })
}

func TestLockerConformance(t *testing.T) {
	storagetest.RunLocker(t, func(*testing.T) storage.Locker { return NewLocker() })
}

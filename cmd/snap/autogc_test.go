package main

// The test binary is not snap: "snap.test gc --auto" would run every test
// again, each starting more of them. Every process of this test binary
// (testscript's "snap" children included) runs with the background gc off.
func init() { noAutoGC = true }

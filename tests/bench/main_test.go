package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountType returns the file system type of the mount that holds dir, from the kernel's mount
// table: an account of dir independent of the statfs magic numbers checkDisk reads.
func mountType(t *testing.T, dir string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mount table: %v", err)
	}
	var best, typ string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		mnt := f[4]
		// Later lines are mounted over earlier ones at the same point, hence >=.
		if (dir == mnt || strings.HasPrefix(dir, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) >= len(best) {
			best, typ = mnt, g[0]
		}
	}
	if typ == "" {
		t.Skipf("%s is in no mount of the mount table", dir)
	}
	return typ
}

func TestCheckDisk(t *testing.T) {
	t.Run("tmpfs is refused", func(t *testing.T) {
		if typ := mountType(t, "/dev/shm"); typ != "tmpfs" {
			t.Skipf("/dev/shm is %s here, not tmpfs", typ)
		}
		if fsType, err := checkDisk("/dev/shm"); err == nil || !strings.Contains(err.Error(), "in memory") {
			t.Fatalf("checkDisk(/dev/shm) = %q, %v; want an in-memory refusal", fsType, err)
		}
	})
	t.Run("a disk is accepted", func(t *testing.T) {
		// This package's directory: in the repository, where the bench puts its data dirs.
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		typ := mountType(t, dir)
		if typ == "tmpfs" || typ == "ramfs" {
			t.Skipf("%s is on %s here", dir, typ)
		}
		fsType, err := checkDisk(dir)
		if err != nil {
			t.Fatalf("checkDisk(%s) on %s: %v", dir, typ, err)
		}
		switch typ {
		case "ext4", "xfs", "btrfs":
			if fsType != typ {
				t.Fatalf("checkDisk(%s) named %q, the mount table %q", dir, fsType, typ)
			}
		}
	})
}

// TestOptionsInJSON keeps every option that shapes a figure in the JSON, new flags included: each
// flag is either in the report's options, under its name with - as _ (and _s for durations), or
// named here as one that shapes no figure.
func TestOptionsInJSON(t *testing.T) {
	shapesNone := map[string]bool{"out": true, "keep": true, "timeout": true, "fill-timeout": true,
		"build-etcd": true, "build": true, "dir": true}
	var usage bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &usage); err == nil {
		t.Fatal("-h: no error")
	}
	o, err := parseFlags(nil, &usage)
	if err != nil {
		t.Fatal(err)
	}
	opts := newReport(o, ".", "ext4").Options
	n := 0
	for _, line := range strings.Split(usage.String(), "\n") {
		name, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		name, typ, _ := strings.Cut(name, " ")
		n++
		key := strings.ReplaceAll(name, "-", "_")
		if typ == "duration" {
			key += "_s"
		}
		if _, in := opts[key]; in == shapesNone[name] {
			t.Errorf("flag -%s: in the JSON options as %q: %v; shapes a figure: %v", name, key, in, !shapesNone[name])
		}
	}
	if n < 15 {
		t.Fatalf("read %d flags from the usage:\n%s", n, usage.String())
	}
}

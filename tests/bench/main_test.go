package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountType returns the file system type of the mount that holds dir, from the kernel's mount
// table: an account of dir independent of the statfs magic numbers checkDisk reads. Every Linux
// has the table, and / is mounted, so not finding dir's mount is a failure.
func mountType(t *testing.T, dir string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
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
		t.Fatalf("%s is in no mount of /proc/self/mountinfo", dir)
	}
	return typ
}

// The verdict for each statfs magic: the in-memory file systems refused, disks named.
func TestDiskKind(t *testing.T) {
	for _, tc := range []struct {
		magic int64
		name  string
	}{
		{tmpfsMagic, ""}, {ramfsMagic, ""},
		{0xef53, "ext4"}, {0x58465342, "xfs"}, {0x9123683e, "btrfs"}, {0x6969, "statfs type 0x6969"},
	} {
		name, err := diskKind("d", tc.magic)
		if inMemory := tc.name == ""; inMemory != (err != nil) || name != tc.name || inMemory && !strings.Contains(err.Error(), "in memory") {
			t.Errorf("%#x: %q, %v; want %q", tc.magic, name, err, tc.name)
		}
	}
}

// checkDisk on real directories agrees with the mount table: refused exactly where the mount is
// tmpfs or ramfs (on this machine /dev/shm, a tmpfs), and naming the disks it knows.
func TestCheckDisk(t *testing.T) {
	// This package's directory: in the repository, where the bench puts its data dirs.
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/dev/shm", here} {
		typ := mountType(t, dir)
		fsType, err := checkDisk(dir)
		switch {
		case typ == "tmpfs" || typ == "ramfs":
			if err == nil || !strings.Contains(err.Error(), "in memory") {
				t.Errorf("checkDisk(%s) on %s = %q, %v; want an in-memory refusal", dir, typ, fsType, err)
			}
		case err != nil:
			t.Errorf("checkDisk(%s) on %s: %v", dir, typ, err)
		case (typ == "ext4" || typ == "xfs" || typ == "btrfs") && fsType != typ:
			t.Errorf("checkDisk(%s) named %q, the mount table %q", dir, fsType, typ)
		}
	}
}

// TestOptionsInJSON keeps every option that shapes a figure in the JSON, new flags included: each
// flag is either in the report's options, under its name with - as _ (and _s for durations), or
// named here as one that shapes no figure.
func TestOptionsInJSON(t *testing.T) {
	shapesNone := map[string]bool{"out": true, "keep": true, "timeout": true, "fill-timeout": true,
		"build-etcd": true, "build": true, "dir": true, "pool": true}
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

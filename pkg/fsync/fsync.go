package fsync

import "os"

// Dir syncs the directory dir, so that a file created or renamed in it survives a crash.
func Dir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

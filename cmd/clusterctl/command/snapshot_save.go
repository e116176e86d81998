package command

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type snapshotSaveOptions struct {
	*Globals
	Path string
}

func newSnapshotSaveCmd(g *Globals) *cobra.Command {
	o := &snapshotSaveOptions{Globals: g}
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of a member's database into FILE",
		Long: `Stream a consistent snapshot from the first endpoint that answers into FILE. The bytes go to
FILE.part beside FILE; FILE appears only once the snapshot's SHA-256 matched and it was synced.
A failed or interrupted save (SIGINT, SIGTERM, --command-timeout) removes FILE.part and leaves no
FILE; a signal ends it with the shell's code for that signal (130, 143). An existing FILE, or a
directory that is not there, is refused before anything is sent (exit 128).

A save holds a lock on FILE.part while it writes. A FILE.part left by a save that was killed
(kill -9, a power cut) holds no lock: the next save into FILE takes it over and succeeds. One that
another running save holds is refused (exit 25), naming it.`,
		Example: `  clusterctl --endpoints=10.0.0.1:2379,10.0.0.2:2379 snapshot save backup.db`,
		RunE:    runE(g, printer.SnapshotSave, o),
	}
}

func (o *snapshotSaveOptions) validate(args []string) error {
	var err error
	o.Path, err = snapshotFile(args)
	return err
}

func (o *snapshotSaveOptions) run(ctx context.Context) error {
	if _, err := os.Lstat(o.Path); err == nil {
		return &usageError{fmt.Errorf("%s already exists: choose another file, or remove it first", o.Path)}
	}
	// A file that cannot be written is the command line's to fix, found before anything is sent.
	dir := filepath.Dir(o.Path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return &usageError{fmt.Errorf("cannot save %s: directory %s does not exist", o.Path, dir)}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	// The save must clean up after itself when interrupted, so the signal ends the context
	// rather than the process, and says which signal it was for the exit code.
	signalled, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		select {
		case s := <-signals:
			cancel(&interruptedError{s.(syscall.Signal)})
		case <-signalled.Done():
		}
	}()
	ctx, stop := o.withTimeout(signalled)
	defer stop()
	r, err := c.SaveSnapshot(ctx, o.Path)
	if err != nil {
		return err
	}
	return o.Printer.SnapshotSave(o.Out, r)
}

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	Name   string   // for messages only
	Path   string   // the program
	Args   []string // without the program name
	Env    []string // the complete environment: nothing is inherited from the test binary
	Dir    string   // working directory
	Stdout string   // file that receives stdout, truncated at start
	Stderr string   // file that receives stderr, truncated at start
}

// Proc is a started process.
type Proc struct {
	spec  Spec
	cmd   *exec.Cmd
	done  chan struct{}
	state *os.ProcessState // set before done is closed
}

// Exit describes how a process ended.
type Exit struct {
	Code   int            // exit status, or -1 when a signal ended the process
	Signal syscall.Signal // the signal that ended it, when Code is -1
}

func (e Exit) String() string {
	if e.Code >= 0 {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return "killed by signal " + e.Signal.String()
}

// Start starts the process described by s. The environment is exactly s.Env, so a developer's
// ETCD_* variables cannot leak into a member and change what a test checks.
func Start(s Spec) (*Proc, error) {
	stdout, err := os.Create(s.Stdout)
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(s.Stderr)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = s.Dir
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Pdeathsig: a server outliving a crashed test would keep its ports and data dir busy.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	// The child has its own copies of the descriptors; ours are no longer needed.
	stdout.Close()
	stderr.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &Proc{spec: s, cmd: cmd, done: make(chan struct{})}
	go func() {
		// Wait's error only repeats what ProcessState says; the state is what callers read.
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Spec returns what the process was started with.
func (p *Proc) Spec() Spec { return p.spec }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits up to timeout for the process to exit and returns how it ended.
func (p *Proc) Wait(timeout time.Duration) (Exit, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exit(), nil
	case <-t.C:
		return Exit{}, fmt.Errorf("%s (pid %d) still running after %v", p.spec.Name, p.Pid(), timeout)
	}
}

func (p *Proc) exit() Exit {
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: p.state.ExitCode()}
}

// Signal sends sig unless the process has already exited.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Kill sends SIGKILL and waits until the process is reaped, so its ports are free when Kill
// returns.
func (p *Proc) Kill(timeout time.Duration) (Exit, error) {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return Exit{}, err
	}
	return p.Wait(timeout)
}

// Stop sends SIGTERM and waits up to timeout for the process to exit. A process that ignores
// SIGTERM is killed so that it cannot outlive the test, and Stop reports the failure.
func (p *Proc) Stop(timeout time.Duration) (Exit, error) {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return Exit{}, err
	}
	e, err := p.Wait(timeout)
	if err != nil {
		_, _ = p.Kill(10 * time.Second)
		return Exit{}, fmt.Errorf("%s did not exit within %v of SIGTERM; killed it", p.spec.Name, timeout)
	}
	return e, nil
}

// StderrTail returns up to the last n lines the process wrote to stderr, for failure messages.
func (p *Proc) StderrTail(n int) string {
	return Tail(p.spec.Stderr, n)
}

// Tail returns up to the last n lines of a file, or a note saying why it could not be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

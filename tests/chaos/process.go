package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	harness "github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
)

// buildClusterd compiles cmd/clusterd once for the run, with the crash points armable
// (pkg/crashpoint): the released binaries have none.
func buildClusterd(dir string, race bool) (string, error) {
	if err := buildTagged(dir, race, "github.com/clusterctl/clusterctl/cmd/clusterd"); err != nil {
		return "", err
	}
	return filepath.Join(dir, "clusterd"), nil
}

// buildTagged compiles pkgs into dir with make build's tags and crashpoints, and without cgo as
// make build has it (so the members create their threads as the released binaries do), unless
// race asks for the race detector, which needs cgo.
func buildTagged(dir string, race bool, pkgs ...string) error {
	args := []string{"build", "-tags=" + harness.BuildTags + ",crashpoints", "-o", dir + string(filepath.Separator)}
	env := []string{"CGO_ENABLED=0"}
	if race {
		args = append(args, "-race")
		env = nil
	}
	args = append(args, pkgs...)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

// freePort is a port on 127.0.0.1 that no other member or proxy of this run was given. Another
// program may take it before the member binds it; the member then fails to listen and the slot
// gets new ports.
func freePort() (int, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// process is one run of clusterd.
type process struct {
	slot    int
	name    string
	mode    string // new, join or restart
	pid     int
	logPath string
	logFrom int64 // where this run's part of the log begins
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and its status is known
	events  *journal

	mu       sync.Mutex
	killed   bool     // the test sent SIGKILL: any status goes
	termed   bool     // the test sent SIGTERM: status 0 expected
	stopped  bool     // SIGSTOP sent and no SIGCONT yet
	pauses   int      // SIGSTOPs sent
	paused   []window // when it was stopped: to is zero while it still is
	exitCode int      // -1 when a signal ended it
	signal   syscall.Signal
	exitedAt time.Time
}

// startProcess starts clusterd with args and, on top of the test's own environment, env
// (KEY=value entries, which win over an inherited variable of the same name).
func startProcess(events *journal, bin, logPath string, slot int, name, mode string, args, env []string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var from int64
	if st, err := logf.Stat(); err == nil {
		from = st.Size()
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a Ctrl-C of the test run reaches the test, which then
	// stops its members in order, and not the members directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(logf, "### %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(append(append(slices.Clone(env), "clusterd"), args...), " "))
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &process{slot: slot, name: name, mode: mode, pid: cmd.Process.Pid, logPath: logPath, logFrom: from,
		started: time.Now(), cmd: cmd, done: make(chan struct{}), events: events}
	events.add("slot %d: %s started (%s), pid %d", slot, name, mode, p.pid)
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.exitedAt = time.Now()
		p.exitCode = cmd.ProcessState.ExitCode()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.signal = ws.Signal()
			}
		}
		p.mu.Unlock()
		events.add("slot %d: %s (pid %d) ended: %s", slot, name, p.pid, p.status())
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// send records what the test does to the process (mark runs under p.mu), journals it and
// sends sig.
func (p *process) send(sig syscall.Signal, mark func()) {
	p.mu.Lock()
	mark()
	p.mu.Unlock()
	names := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGSTOP: "SIGSTOP", syscall.SIGCONT: "SIGCONT"}
	p.events.add("slot %d: %s %s (pid %d)", p.slot, names[sig], p.name, p.pid)
	_ = p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	p.send(syscall.SIGKILL, func() { p.killed = true })
	<-p.done
}

// quit makes the process print its goroutines and end (SIGQUIT), for a failure message; after
// within it is killed.
func (p *process) quit(within time.Duration) {
	p.resume()
	p.send(syscall.SIGQUIT, func() { p.killed = true })
	select {
	case <-p.done:
	case <-time.After(within):
		p.kill()
	}
}

// ownGoroutines sums up the process's last goroutine dump: one line per goroutine that runs this
// module's code, its state and its frames in this module, innermost first.
func (p *process) ownGoroutines() string {
	b, _ := os.ReadFile(p.logPath)
	log := string(b)
	i := strings.LastIndex(log, "SIGQUIT: quit")
	if i < 0 {
		return "(no goroutine dump)"
	}
	const module = "github.com/clusterctl/clusterctl/"
	var out []string
	for _, g := range strings.Split(log[i:], "\n\n") {
		lines := strings.Split(g, "\n")
		if !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		state := lines[0]
		if l, r := strings.Index(state, "["), strings.LastIndex(state, "]"); l >= 0 && r > l {
			state = state[l : r+1]
		}
		var frames []string
		for j := 1; j+1 < len(lines); j += 2 {
			fn := lines[j]
			if !strings.HasPrefix(fn, module) {
				continue
			}
			if k := strings.LastIndex(fn, "("); k > 0 && strings.HasSuffix(fn, ")") {
				fn = fn[:k] // the arguments
			}
			at := strings.TrimSpace(lines[j+1])
			if k := strings.Index(at, " "); k > 0 {
				at = at[:k]
			}
			frames = append(frames, strings.TrimPrefix(fn, module)+" "+filepath.Base(at))
		}
		if len(frames) > 0 {
			out = append(out, state+" "+strings.Join(frames, " < "))
		}
	}
	if len(out) > 40 {
		out = append(out[:40], fmt.Sprintf("(%d more in the log)", len(out)-40))
	}
	return strings.Join(out, "\n")
}

// terminate asks the process to stop and waits at most within; after that it is killed.
func (p *process) terminate(within time.Duration) bool {
	p.resume()
	p.send(syscall.SIGTERM, func() { p.termed = true })
	select {
	case <-p.done:
		return true
	case <-time.After(within):
		p.kill()
		return false
	}
}

func (p *process) pause() {
	p.send(syscall.SIGSTOP, func() {
		p.stopped, p.pauses = true, p.pauses+1
		p.paused = append(p.paused, window{from: time.Now()})
	})
}

// pauseCount is how many times the test has paused the process.
func (p *process) pauseCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pauses
}

func (p *process) resume() {
	p.send(syscall.SIGCONT, func() {
		if p.stopped {
			p.paused[len(p.paused)-1].to = time.Now()
		}
		p.stopped = false
	})
}

// status is how the process ended, for messages.
func (p *process) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signal != 0 {
		return "killed by " + p.signal.String()
	}
	return fmt.Sprintf("exit status %d", p.exitCode)
}

// ownExit is the exit status of a process that ended by itself, or false if the test ended it.
func (p *process) ownExit() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed || p.termed {
		return 0, false
	}
	return p.exitCode, true
}

// ownLog is this run's part of the log.
func (p *process) ownLog() string {
	b, _ := os.ReadFile(p.logPath)
	if p.logFrom <= int64(len(b)) {
		b = b[p.logFrom:]
	}
	return string(b)
}

// logTail is the end of this run's log, for a failure message.
func (p *process) logTail(lines int) string {
	b, _ := os.ReadFile(p.logPath)
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

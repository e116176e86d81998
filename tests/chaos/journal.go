package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// journal records what the test did to the processes and the network, in order, with the
// time since the run began: a failure prints its end, and the whole of it stays in the run's
// directory (events.log), to line up with the members' logs.
type journal struct {
	mu    sync.Mutex
	start time.Time
	file  *os.File
	tail  []string // the latest lines, at most journalTail
}

const journalTail = 80

func newJournal(path string) (*journal, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &journal{start: time.Now(), file: f}, nil
}

func (j *journal) add(format string, args ...any) {
	now := time.Now()
	line := fmt.Sprintf("%9.3fs %s %s", now.Sub(j.start).Seconds(), now.UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintln(j.file, line)
	j.tail = append(j.tail, line)
	if len(j.tail) > journalTail {
		j.tail = j.tail[len(j.tail)-journalTail:]
	}
}

// last returns the latest lines, oldest first.
func (j *journal) last() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.tail, "\n")
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.file.Close()
}

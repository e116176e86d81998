package server

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

func get(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// wantGet waits until url answers code with body (any body when body is empty).
func wantGet(t *testing.T, url string, code int, body string) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		c, b, err := get(url)
		if err != nil {
			return err
		}
		if c != code || body != "" && b != body {
			return errors.New(url + ": " + http.StatusText(c) + " " + b)
		}
		return nil
	})
}

func TestMetricsURLs(t *testing.T) {
	metrics := map[string]string{}
	ms := startCluster(t, 2, func(c *Config) {
		u := "http://" + freePort(t)
		metrics[c.Name] = u
		c.ListenMetricsURLs, c.EnablePprof = []string{u}, c.Name == "m0"
	})
	for _, m := range ms {
		wantGet(t, metrics[m.name]+"/health", http.StatusOK, "{\"health\":\"true\",\"reason\":\"\"}\n")
	}
	wantGet(t, metrics["m0"]+"/debug/pprof/cmdline", http.StatusOK, "")
	wantGet(t, metrics["m1"]+"/debug/pprof/cmdline", http.StatusNotFound, "")

	// The other of two voters gone: no leader, and /health says so the way etcd's does.
	if err := ms[1].stop(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, metrics["m0"]+"/health", http.StatusServiceUnavailable, "{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}\n")
}

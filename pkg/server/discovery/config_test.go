package discovery

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Token, ok.Endpoints = "tok", []string{"127.0.0.1:2379"}
	tests := []struct {
		name    string
		change  func(*Config)
		given   bool
		wantErr string
	}{
		{"off", func(c *Config) { *c = DefaultConfig() }, true, ""},
		{"on", func(*Config) {}, false, ""},
		{"with --initial-cluster", func(*Config) {}, true, ErrConflictBootstrapFlags.Error()},
		{"token only", func(c *Config) { c.Endpoints = nil }, false, "both --discovery-token and --discovery-endpoints must be set"},
		{"endpoints only", func(c *Config) { c.Token = "" }, false, "both --discovery-token and --discovery-endpoints must be set"},
		{"empty endpoint", func(c *Config) { c.Endpoints = []string{" "} }, false, "--discovery-endpoints must not contain empty endpoints"},
		{"slash in token", func(c *Config) { c.Token = "a/b" }, false, `--discovery-token: discovery token "a/b": must not contain '/' or spaces, nor be . or ..`},
		{"cert alone", func(c *Config) { c.Cert = "c.pem" }, false, "--discovery-cert and --discovery-key must be given together"},
		{"two passwords", func(c *Config) { c.User, c.Password = "u:p", "q" }, false, "--discovery-password is given, so --discovery-user must not include a password"},
		{"no wait", func(c *Config) { c.WaitTimeout = 0 }, false, "--discovery-wait-timeout must be positive, not 0s"},
	}
	for _, tt := range tests {
		c := ok
		tt.change(&c)
		err := c.Validate(tt.given)
		if got := errString(err); got != tt.wantErr {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.wantErr)
		}
	}
	c := ok
	if err := c.Validate(true); !errors.Is(err, ErrConflictBootstrapFlags) {
		t.Errorf("not ErrConflictBootstrapFlags: %v", err)
	}
}

func TestClientConfigSplitsUserPassword(t *testing.T) {
	c := DefaultConfig()
	c.Token, c.Endpoints, c.User = "tok", []string{"127.0.0.1:2379"}, "root:secret"
	cc, err := c.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cc.Username != "root" || cc.Password != "secret" || cc.TLS != nil {
		t.Errorf("user %q password %q tls %v", cc.Username, cc.Password, cc.TLS)
	}
	c.InsecureTransport = false
	if cc, _ = c.clientConfig(); cc.TLS == nil {
		t.Error("--discovery-insecure-transport=false gave no TLS")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package printer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/registry"
)

// NewToken is a token discovery new created, with its JSON (docs/commands/discovery-new.md):
// never rename a field.
type NewToken struct {
	Token string `json:"token"`
	Size  int    `json:"size"`
	// Endpoints are the discovery service's, as the members give them to --discovery-endpoints.
	Endpoints list[string] `json:"endpoints"`
	// TLS are the files the members reach the service with, nil when it was reached without
	// TLS. Only -w env prints them; the JSON schema has no field for them.
	TLS *clienttls.Options `json:"-"`
}

// TokenStatus is a token's registry as discovery status shows it.
type TokenStatus struct {
	Token   string
	Cluster *registry.Cluster
}

// DiscoveryNew prints the token discovery new created: in simple the token alone, so that
// TOKEN=$(clusterctl discovery new) works; in env the lines a member starts with.
func (p Printer) DiscoveryNew(w io.Writer, r *NewToken) error {
	return p.print(w, p.Check(DiscoveryNew), r, func(b *bytes.Buffer) {
		if p.format == Env {
			discoveryEnv(b, r)
		} else {
			b.WriteString(r.Token + "\n")
		}
	})
}

// discoveryEnv is the ETCD_DISCOVERY_* lines of a member: the token and endpoints, and with TLS
// the settings that make etcd's discovery client use TLS as clusterctl did. Never a user or a
// password: credentials are each member's own to give.
func discoveryEnv(b *bytes.Buffer, r *NewToken) {
	line := func(k, v string) { fmt.Fprintf(b, "%s=\"%s\"\n", k, dquote.Replace(v)) }
	line("ETCD_DISCOVERY_TOKEN", r.Token)
	line("ETCD_DISCOVERY_ENDPOINTS", strings.Join(r.Endpoints, ","))
	if t := r.TLS; t != nil {
		// The endpoints are printed as host:port, which etcd dials in the clear by default.
		line("ETCD_DISCOVERY_INSECURE_TRANSPORT", "false")
		for _, kv := range [][2]string{{"ETCD_DISCOVERY_CACERT", t.CACert}, {"ETCD_DISCOVERY_CERT", t.Cert}, {"ETCD_DISCOVERY_KEY", t.Key}} {
			if kv[1] != "" {
				line(kv[0], kv[1])
			}
		}
		if t.InsecureSkipVerify {
			line("ETCD_DISCOVERY_INSECURE_SKIP_TLS_VERIFY", "true")
		}
	}
}

// registrationColumns feed both the simple lines and the table of discovery status.
var registrationColumns = []column[registry.Placed]{
	{name: "ID", value: func(p registry.Placed) string { return registrationID(p.Registration) }},
	{name: "NAME", value: func(p registry.Placed) string { return p.Name }},
	{name: "PEER ADDRS", value: func(p registry.Placed) string { return strings.Join(p.PeerURLs, ",") }},
	{name: "STATE", value: func(p registry.Placed) string { return string(p.State) }},
	{name: "CREATE REVISION", value: func(p registry.Placed) string { return strconv.FormatInt(p.CreateRevision, 10) }, tableOnly: true},
}

// registrationID is the ID in a registration's key in the contract's 16 hex digits, or the
// key's last element when that is not an ID.
func registrationID(r registry.Registration) string {
	if r.ID != 0 {
		return client.FormatID(r.ID)
	}
	return r.Key[strings.LastIndex(r.Key, "/")+1:]
}

// DiscoveryStatus prints the expected size and every registration, in the cluster's order.
func (p Printer) DiscoveryStatus(w io.Writer, r *TokenStatus) error {
	c := r.Cluster
	return p.print(w, p.Check(DiscoveryStatus), toTokenStatusJSON(r), func(b *bytes.Buffer) {
		if p.format == Simple {
			fmt.Fprintf(b, "token: %s\nsize: %d\nregistered: %d\n", r.Token, c.Size, len(c.Members))
			drawRows(b, p.format, registrationColumns, c.All)
			return
		}
		table(b, []column[*TokenStatus]{
			{name: "TOKEN", value: func(s *TokenStatus) string { return s.Token }},
			{name: "SIZE", value: func(s *TokenStatus) string { return strconv.Itoa(s.Cluster.Size) }},
			{name: "REGISTERED", value: func(s *TokenStatus) string { return strconv.Itoa(len(s.Cluster.Members)) }},
			{name: "FULL", value: func(s *TokenStatus) string { return strconv.FormatBool(s.Cluster.Full()) }},
		}, []*TokenStatus{r})
		if len(c.All) > 0 {
			table(b, registrationColumns, c.All)
		}
	})
}

// The JSON of discovery status (docs/commands/discovery-status.md). Never rename a field.

type tokenStatusJSON struct {
	Token      string             `json:"token"`
	Size       int                `json:"size"`
	Registered int                `json:"registered"`
	Full       bool               `json:"full"`
	Members    []registrationJSON `json:"members"`
}

type registrationJSON struct {
	ID             string       `json:"ID"`
	Name           string       `json:"name"`
	PeerURLs       list[string] `json:"peerURLs"`
	State          string       `json:"state"`
	CreateRevision int64        `json:"createRevision"`
	// ConflictsWith is the ID of the earlier registration a conflict clashes with.
	ConflictsWith string `json:"conflictsWith,omitempty"`
}

func toTokenStatusJSON(r *TokenStatus) tokenStatusJSON {
	c := r.Cluster
	return tokenStatusJSON{Token: r.Token, Size: c.Size, Registered: len(c.Members), Full: c.Full(),
		Members: each(c.All, func(p registry.Placed) registrationJSON {
			m := registrationJSON{ID: registrationID(p.Registration), Name: p.Name, PeerURLs: p.PeerURLs,
				State: string(p.State), CreateRevision: p.CreateRevision}
			if with, ok := c.Find(p.With); ok {
				m.ConflictsWith = registrationID(with.Registration)
			}
			return m
		})}
}

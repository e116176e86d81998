package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/discovery"
)

// discoveryBools are the discovery settings read as booleans, beside the others in buildConfig.
var discoveryBools = []string{"discovery-insecure-transport", "discovery-insecure-skip-tls-verify"}

// defineDiscoveryFlags declares etcd's v3 discovery flags, with etcd's names, meanings and
// defaults, and clusterd's own --discovery-wait-timeout.
func defineDiscoveryFlags(fs *pflag.FlagSet) {
	d := discovery.DefaultConfig()
	fs.String("discovery-token", "", "v3 discovery: the token of the cluster to bootstrap (docs/runbooks/discovery.md); bootstrap only")
	fs.String("discovery-endpoints", "", "v3 discovery: client URLs of the discovery service (an etcd cluster), comma-separated")
	fs.Duration("discovery-dial-timeout", d.DialTimeout, "v3 discovery: how long to try connecting to the discovery service")
	fs.Duration("discovery-request-timeout", d.RequestTimeout, "v3 discovery: how long one request may take")
	fs.Duration("discovery-keepalive-time", d.KeepAliveTime, "v3 discovery: keepalive time of the connection")
	fs.Duration("discovery-keepalive-timeout", d.KeepAliveTimeout, "v3 discovery: keepalive timeout of the connection")
	fs.Duration("discovery-wait-timeout", d.WaitTimeout, "clusterd's own, not etcd's: how long to wait for the cluster to fill")
	fs.String("discovery-cacert", "", "v3 discovery: CA bundle that signs the discovery service's certificates")
	fs.String("discovery-cert", "", "v3 discovery: client certificate")
	fs.String("discovery-key", "", "v3 discovery: client key")
	fs.Bool("discovery-insecure-transport", d.InsecureTransport, "v3 discovery: connect without TLS")
	fs.Bool("discovery-insecure-skip-tls-verify", false, "v3 discovery: do not verify the discovery service's certificate")
	fs.String("discovery-user", "", "v3 discovery: user name, or name:password")
	fs.String("discovery-password", "", "v3 discovery: password")
}

// discoveryConfig reads the discovery settings; bools holds those of discoveryBools.
func discoveryConfig(v *viper.Viper, bools map[string]bool) (discovery.Config, error) {
	durations, err := readAll(v, castDuration, "discovery-dial-timeout", "discovery-request-timeout",
		"discovery-keepalive-time", "discovery-keepalive-timeout", "discovery-wait-timeout")
	if err != nil {
		return discovery.Config{}, err
	}
	return discovery.Config{
		Token:                 v.GetString("discovery-token"),
		Endpoints:             membership.SplitURLs(v.GetString("discovery-endpoints")),
		DialTimeout:           durations["discovery-dial-timeout"],
		RequestTimeout:        durations["discovery-request-timeout"],
		KeepAliveTime:         durations["discovery-keepalive-time"],
		KeepAliveTimeout:      durations["discovery-keepalive-timeout"],
		WaitTimeout:           durations["discovery-wait-timeout"],
		ProgressInterval:      discovery.DefaultProgressInterval,
		CACert:                v.GetString("discovery-cacert"),
		Cert:                  v.GetString("discovery-cert"),
		Key:                   v.GetString("discovery-key"),
		InsecureTransport:     bools["discovery-insecure-transport"],
		InsecureSkipTLSVerify: bools["discovery-insecure-skip-tls-verify"],
		User:                  v.GetString("discovery-user"),
		Password:              v.GetString("discovery-password"),
	}, nil
}

// castDuration is strict, as every other setting: a bare number is no duration.
func castDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("must be a duration with a unit, such as 5s")
	}
	return d, nil
}

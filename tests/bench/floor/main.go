package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) != 1 && len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: floor HOST:PORT [CACERT CERT KEY]")
		return 1
	}
	creds := insecure.NewCredentials()
	if len(args) == 4 {
		c, err := tlsCreds(args[1], args[2], args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		creds = c
	}
	cc, err := grpc.NewClient("passthrough:///"+args[0], grpc.WithTransportCredentials(creds))
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	// Not closed, as clusterctl leaves its connection to the kernel at exit (command.Main).
	// The same bound clusterctl's default --command-timeout puts on a request.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	answer, err := pb.NewClusterClient(cc).MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	fmt.Println(len(answer.GetMembers()))
	return 0
}

// tlsCreds is what clusterctl and etcdctl do with --cacert, --cert and --key: read the three
// files, verify the member against the CA, present the client certificate.
func tlsCreds(caFile, certFile, keyFile string) (credentials.TransportCredentials, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}), nil
}

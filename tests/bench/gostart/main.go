// Command gostart does nothing: `make bench` times it as the floor of any Go process on this
// machine (exec, the runtime's start-up, exit), under the gRPC floor and clusterctl.
package main

func main() {}

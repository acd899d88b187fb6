// Command etcd is etcd's own server entry point, built from its Go module in a module of its
// own so that etcd's dependency versions never have to agree with Kubernetes'.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

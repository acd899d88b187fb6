//go:build tools

// Package controlplane pins the Kubernetes commands this project builds. It is never compiled:
// the blank imports only keep the commands' packages in go.mod, so one `go build` of the three
// commands shares a single compile cache.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

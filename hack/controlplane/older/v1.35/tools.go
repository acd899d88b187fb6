//go:build tools

// Package older pins the kube-apiserver of Kubernetes v1.35, built by `build --older`.
package older

import _ "k8s.io/kubernetes/cmd/kube-apiserver"

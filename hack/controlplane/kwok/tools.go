//go:build tools

// Package kwok pins kwok, the simulated kubelets of the local cluster. It has a module of its own
// because kwok's Kubernetes libraries are not the control plane's; `build` compiles the command.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"

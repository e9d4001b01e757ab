module github.com/duix-exporter/duix_exporter/mixin

go 1.26.8

require (
	github.com/google/go-jsonnet v0.22.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5
)

require (
	golang.org/x/crypto v0.45.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
)

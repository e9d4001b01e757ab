// Command probe is the whole of a container that image_test.go runs to
// find out whether podman can run containers here at all.
package main

import "fmt"

func main() { fmt.Println("probe ok") }

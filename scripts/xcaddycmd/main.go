// Command xcaddycmd prints the xcaddy build command equivalent to
// xcaddy.toml (make print-xcaddy).
package main

import (
	"fmt"
	"os"

	"socialrouter/internal/buildmanifest"
)

func main() {
	m, err := buildmanifest.Read("xcaddy.toml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(m.Command())
}

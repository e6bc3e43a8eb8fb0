// Go net/http peer for the fibra benchmark harness: GET /plaintext -> "Hello, World!".
// Run with GOMAXPROCS=1 (the harness sets it). Arg: port.
package main

import (
	"log"
	"net/http"
	"os"
)

var hello = []byte("Hello, World!")

func main() {
	port := "8080"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	http.HandleFunc("/plaintext", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain")
		h.Set("Server", "go")
		w.Write(hello)
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}

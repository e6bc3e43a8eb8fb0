// h3load: an HTTP/3 load generator on quic-go, for a spot check of `fibra bench --h3`'s
// figures with an independent QUIC stack. C connections (each its own QUIC connection and
// UDP socket) with M requests in flight on each, for D; every answer must be 2xx with the
// expected body length. Prints requests, req/s and the body bytes read.
//
//	h3load -c 100 -m 10 -d 5s -len 13 https://127.0.0.1:8443/plaintext
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

func main() {
	conns := flag.Int("c", 100, "connections")
	streams := flag.Int("m", 10, "requests in flight per connection")
	dur := flag.Duration("d", 5*time.Second, "duration")
	want := flag.Int64("len", -1, "expected body length (-1: any)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: h3load [-c N] [-m N] [-d D] [-len N] URL")
		os.Exit(2)
	}
	url := flag.Arg(0)
	var ok, bad, body atomic.Int64
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for i := 0; i < *conns; i++ {
		// A transport per connection: its own QUIC connection and UDP socket.
		tr := &http3.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
			QUICConfig:      &quic.Config{MaxIncomingStreams: int64(*streams)},
		}
		client := &http.Client{Transport: tr}
		for j := 0; j < *streams; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", url, nil)
					resp, err := client.Do(req)
					if err != nil {
						bad.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode/100 != 2 || (*want >= 0 && n != *want) {
						bad.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d, %d bytes, %v", resp.StatusCode, n, err))
						continue
					}
					ok.Add(1)
					body.Add(n)
				}
			}()
		}
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("%d succeeded, %d failed, %.0f req/s, %d body bytes in %.2f s\n",
		ok.Load(), bad.Load(), float64(ok.Load())/secs, body.Load(), secs)
	if e := firstErr.Load(); e != nil {
		fmt.Printf("first error: %v\n", e)
	}
	if ok.Load() == 0 || bad.Load() > 0 {
		os.Exit(1)
	}
}

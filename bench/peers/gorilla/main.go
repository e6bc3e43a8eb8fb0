// A gorilla/websocket echo server, the peer of bench/ws_gorilla.sh: /ws sends every text and
// binary message back (gorilla's examples/echo, without the page), messages up to 16 MiB as
// fibra hello's /ws.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(*http.Request) bool { return true },
}

func echo(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetReadLimit(16 << 20)
	for {
		kind, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(kind, msg); err != nil {
			return
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/ws", echo)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

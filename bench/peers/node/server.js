// Node http peer for the fibra benchmark harness: GET /plaintext -> "Hello, World!".
// One process, one event loop. Arg: port.
'use strict';
const http = require('http');

const port = Number(process.argv[2] || 8080);
const body = Buffer.from('Hello, World!');

http
  .createServer((req, res) => {
    if (req.url === '/plaintext') {
      res.writeHead(200, {
        'Content-Type': 'text/plain',
        'Content-Length': body.length,
        Server: 'node',
      });
      res.end(body);
    } else {
      res.writeHead(404, { 'Content-Length': 0 });
      res.end();
    }
  })
  .listen(port, '127.0.0.1');

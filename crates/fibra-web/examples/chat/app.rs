//! The chat app: a page, messages posted as forms, and every message broadcast to every open
//! page as server-sent events.
//!
//! - `GET /`: the page (how many listen, an `EventSource` on `/events`, a form posting to `/messages`);
//! - `POST /messages` (`user=…&text=…`, a urlencoded form): `204`, and the message goes to
//!   every subscriber;
//! - `GET /events`: `text/event-stream`, one `message` event per message (its data the JSON
//!   `{"user": …, "text": …}`, its id the message's number), a keep-alive comment every 15
//!   seconds.
//!
//! Each subscriber has a bounded queue: one that falls 64 messages behind is dropped (its
//! stream ends; a browser's `EventSource` reconnects), so a slow reader never holds the
//! others up or grows the server's memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use fibra_web::extract::{Form, State};
use fibra_web::http::StatusCode;
use fibra_web::response::sse::{Event, KeepAlive, Sse, SseSender};
use fibra_web::response::Html;
use fibra_web::routing::{get, post};
use fibra_web::Router;
use serde::{Deserialize, Serialize};

/// A message as posted, and as each event's data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub user: String,
    /// What they wrote.
    pub text: String,
}

/// How far a subscriber may fall behind before it is dropped.
const BACKLOG: usize = 64;

/// A message numbered for its event's id.
type Numbered = (u64, Arc<Message>);

/// The subscribers, shared by every worker.
#[derive(Clone, Default)]
pub struct Hub {
    subscribers: Arc<Mutex<Vec<SyncSender<Numbered>>>>,
    next_id: Arc<AtomicU64>,
}

impl Hub {
    /// Sends `msg` to every subscriber; drops those that are gone or too far behind.
    pub fn broadcast(&self, msg: Message) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let msg = Arc::new(msg);
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|tx| match tx.try_send((id, msg.clone())) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
        });
    }

    /// How many subscribers are listening.
    pub fn subscribers(&self) -> usize {
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// The app over `hub`.
pub fn router(hub: Hub) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/messages", post(send))
        .route("/events", get(events))
        .with_state(hub)
}

fn page(State(hub): State<Hub>) -> Html<String> {
    Html(PAGE.replace("{listening}", &hub.subscribers().to_string()))
}

fn send(State(hub): State<Hub>, Form(msg): Form<Message>) -> StatusCode {
    if msg.text.trim().is_empty() {
        return StatusCode::UNPROCESSABLE_ENTITY;
    }
    hub.broadcast(msg);
    StatusCode::NO_CONTENT
}

fn events(State(hub): State<Hub>) -> Sse {
    let (tx, rx) = sync_channel(BACKLOG);
    hub.subscribers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(tx);
    Sse::new(move |out: &mut SseSender| {
        // Ends when the hub drops this subscriber, or `send` fails (the client is gone, the
        // server is shutting down).
        while let Ok((id, msg)) = rx.recv() {
            let event = Event::default()
                .event("message")
                .id(id.to_string())
                .json_data(&*msg)
                .map_err(std::io::Error::other)?;
            out.send(event)?;
        }
        Ok(())
    })
    .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

const PAGE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Chat</title></head>
<body>
<p>{listening} listening when this page was served.</p>
<ul id="log"></ul>
<form id="f"><input name="user" placeholder="name" value="anon">
<input name="text" placeholder="message" autofocus><button>Send</button></form>
<script>
const log = document.getElementById("log");
new EventSource("/events").addEventListener("message", (e) => {
  const m = JSON.parse(e.data);
  const li = document.createElement("li");
  li.textContent = m.user + ": " + m.text;
  log.appendChild(li);
});
document.getElementById("f").addEventListener("submit", (e) => {
  e.preventDefault();
  fetch("/messages", { method: "POST", body: new URLSearchParams(new FormData(e.target)) });
  e.target.text.value = "";
});
</script>
</body></html>
"#;

//! A client's retry answered once (`answer_retries_once`): what the server
//! remembers of each stored element that carried the client's key
//! (`isim-request-key`), so that a retry of it gets the first attempt's reply
//! and is not stored a second time.
//!
//! A client whose reply was lost (a timeout, a broken connection) cannot tell
//! a write that never happened from one whose answer went missing, so it sends
//! the same request again under the same key, as Stripe's idempotency keys and
//! the IETF's `Idempotency-Key` draft have it. The server keeps, for each key,
//! the reply it gave and a copy of the element's bytes: a retry with other
//! bytes under the same key is the client's bug, and gets 422 instead of the
//! first element's reply. The copy is the server's own (taken in
//! [`AnsweredOnce::remember`]), not a slice of the request's buffer, which
//! would keep the whole of hyper's read buffer alive with it.
//!
//! What it remembers is forgotten `remember_replies_for` after it was stored,
//! oldest first, each time a keyed element arrives; 0 keeps it for ever.
//! Only a reply that was given is remembered: a retry that comes while its
//! first attempt still runs is stored again (a documented limit: a client
//! retries after its own timeout, by when the first attempt has answered).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use simulator_api::Reply;
use tokio::time::Instant;

use super::Element;

/// The replies remembered, and the retries answered from them.
#[derive(Debug, Default)]
pub struct AnsweredOnce {
    book: Mutex<Book>,
    /// Retries answered from memory since start.
    answered: AtomicU64,
}

/// The replies by key, and the keys in the order they were remembered.
#[derive(Debug, Default)]
struct Book {
    replies: HashMap<u64, Remembered>,
    arrivals: VecDeque<(Instant, u64)>,
    /// The bytes the remembered elements' copies hold.
    bytes: u64,
}

/// One key's reply and what its element was.
#[derive(Debug)]
struct Remembered {
    reply: Reply,
    element: Kept,
    at: Instant,
}

/// What is kept of an element to tell a retry from another element under the
/// same key: its bytes, or a synthetic element's size.
#[derive(Debug, PartialEq, Eq)]
enum Kept {
    Bytes(Box<[u8]>),
    Size(u64),
}

impl Kept {
    fn len(&self) -> u64 {
        match self {
            Kept::Bytes(bytes) => bytes.len() as u64,
            Kept::Size(_) => 0,
        }
    }

    fn same_as(&self, element: &Element) -> bool {
        match (self, element) {
            (Kept::Bytes(kept), Element::Bytes(sent)) => kept[..] == sent[..],
            (Kept::Size(kept), Element::Synthetic(sent)) => kept == sent,
            _ => false,
        }
    }
}

/// What the book says of a keyed element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A retry: the first attempt's reply.
    Before(Reply),
    /// The key was used for another element.
    OtherElement,
    /// Not remembered: store it.
    New,
}

impl AnsweredOnce {
    /// Whether the element under `key` was stored before, forgetting first
    /// what was remembered longer than `remember_for` ago (0: nothing).
    pub fn look_up(&self, key: u64, element: &Element, remember_for: Duration) -> Seen {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        if !remember_for.is_zero() {
            book.forget_older_than(Instant::now(), remember_for);
        }
        match book.replies.get(&key) {
            None => Seen::New,
            Some(remembered) if remembered.element.same_as(element) => {
                self.answered.fetch_add(1, Ordering::Relaxed);
                Seen::Before(remembered.reply)
            }
            Some(_) => Seen::OtherElement,
        }
    }

    /// Remembers `reply` for the element stored under `key`, with a copy of
    /// its bytes. Never inlined, so that a heap profile names the frame whose
    /// copies the book holds.
    #[inline(never)]
    pub fn remember(&self, key: u64, element: &Element, reply: Reply) {
        let element = match element {
            Element::Bytes(bytes) => Kept::Bytes(bytes.to_vec().into_boxed_slice()),
            Element::Synthetic(size) => Kept::Size(*size),
        };
        let at = Instant::now();
        let added = element.len();
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let before = book.replies.insert(key, Remembered { reply, element, at });
        book.bytes = book.bytes + added - before.map_or(0, |b| b.element.len());
        book.arrivals.push_back((at, key));
    }

    /// Forgets every reply: the setting turned off.
    pub fn forget_all(&self) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        *book = Book::default();
    }

    /// Replies remembered now, and the bytes their elements' copies hold.
    pub fn held(&self) -> (u64, u64) {
        let book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        (book.replies.len() as u64, book.bytes)
    }

    /// Retries answered from memory since start.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Book {
    /// Forgets, oldest first, what was remembered `remember_for` before `now`.
    /// A key remembered again since keeps its newer reply.
    fn forget_older_than(&mut self, now: Instant, remember_for: Duration) {
        while let Some(&(at, key)) = self.arrivals.front() {
            if now.saturating_duration_since(at) < remember_for {
                break;
            }
            self.arrivals.pop_front();
            if self.replies.get(&key).is_some_and(|r| r.at == at) {
                if let Some(gone) = self.replies.remove(&key) {
                    self.bytes -= gone.element.len();
                }
            }
        }
        // Shrunk where most of it was forgotten: a map keeps its table at its
        // largest, and a fix applied to a book that grew for an hour should give
        // the memory back.
        if self.replies.capacity() > 4 * self.replies.len().max(1024) {
            self.replies.shrink_to_fit();
            self.arrivals.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn reply(id: u64) -> Reply {
        Reply {
            id,
            blocked: false,
            permit_wait_ns: 0,
            digest: None,
        }
    }

    fn element(text: &'static str) -> Element {
        Element::Bytes(Bytes::from_static(text.as_bytes()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_gets_the_first_reply_until_it_is_forgotten() {
        let book = AnsweredOnce::default();
        let keep = Duration::from_secs(5);
        assert_eq!(book.look_up(7, &element("abc"), keep), Seen::New);
        book.remember(7, &element("abc"), reply(1));
        assert_eq!(book.held(), (1, 3));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(
            book.look_up(7, &element("abc"), keep),
            Seen::Before(reply(1))
        );
        assert_eq!(book.look_up(7, &element("abd"), keep), Seen::OtherElement);
        assert_eq!(book.answered(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(book.look_up(7, &element("abc"), keep), Seen::New);
        assert_eq!(book.held(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn for_ever_forgets_nothing_and_a_key_remembered_again_keeps_its_newer_reply() {
        let book = AnsweredOnce::default();
        book.remember(1, &Element::Synthetic(10), reply(1));
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(
            book.look_up(1, &Element::Synthetic(10), Duration::ZERO),
            Seen::Before(reply(1))
        );
        book.remember(1, &Element::Synthetic(10), reply(2));
        let keep = Duration::from_secs(10);
        // The first arrival is an hour old; the second, not.
        assert_eq!(
            book.look_up(1, &Element::Synthetic(10), keep),
            Seen::Before(reply(2))
        );
        assert_eq!(
            book.look_up(1, &Element::Synthetic(11), keep),
            Seen::OtherElement
        );
        book.forget_all();
        assert_eq!(book.held(), (0, 0));
    }
}

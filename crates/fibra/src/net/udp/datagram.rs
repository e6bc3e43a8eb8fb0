//! [`OutDatagram`] and [`InDatagram`]: one entry of a batch for
//! [`UdpSocket::send_many`](super::UdpSocket::send_many) and
//! [`UdpSocket::recv_many`](super::UdpSocket::recv_many).

use std::net::SocketAddr;

/// A datagram to send with [`UdpSocket::send_many`](super::UdpSocket::send_many): its bytes,
/// where it goes, and optionally a segment size that makes it a train of datagrams.
///
/// With a segment size, the buffer is cut into datagrams of that many bytes (the last one may
/// be shorter), all to the same address. Where the kernel has UDP GSO (`UDP_SEGMENT`) they are
/// handed to it in one piece and cut as late as possible (by the network card, or just before
/// the driver); elsewhere, or with [`UdpSocket::set_gso(false)`](super::UdpSocket::set_gso),
/// fibra sends each segment as its own datagram. The receiver sees the same datagrams either
/// way. With GSO a train may have at most
/// [`max_gso_segments`](super::UdpSocket::max_gso_segments) segments and 64 KiB in all (IP's
/// limit on one packet before it is cut), and each segment must fit the path's MTU.
///
/// ```
/// # use fibra::net::OutDatagram;
/// let addr = "127.0.0.1:4433".parse().unwrap();
/// let payload = [0u8; 3600];
/// // Three datagrams of 1,200 bytes to `addr`.
/// let d = OutDatagram::to(addr, &payload).with_segment_size(1200);
/// assert_eq!(d.segment_size(), Some(1200));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct OutDatagram<'a> {
    pub(super) buf: &'a [u8],
    pub(super) addr: Option<SocketAddr>,
    pub(super) segment_size: Option<usize>,
}

impl<'a> OutDatagram<'a> {
    /// `buf` as one datagram to `addr`.
    pub fn to(addr: SocketAddr, buf: &'a [u8]) -> OutDatagram<'a> {
        OutDatagram {
            buf,
            addr: Some(addr),
            segment_size: None,
        }
    }

    /// `buf` as one datagram to the socket's connected peer (see
    /// [`UdpSocket::connect`](super::UdpSocket::connect)).
    pub fn connected(buf: &'a [u8]) -> OutDatagram<'a> {
        OutDatagram {
            buf,
            addr: None,
            segment_size: None,
        }
    }

    /// Cuts the buffer into datagrams of `size` bytes, the last one possibly shorter (UDP
    /// GSO, see the type's doc). `size` must be 1 to 65,535 (`send_many` says
    /// `InvalidInput` otherwise); a buffer no longer than `size` is one datagram.
    pub fn with_segment_size(self, size: usize) -> OutDatagram<'a> {
        OutDatagram {
            segment_size: Some(size),
            ..self
        }
    }

    /// The bytes to send.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// The destination; `None` for the connected peer.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The segment size, if the buffer is to be cut into several datagrams.
    pub fn segment_size(&self) -> Option<usize> {
        self.segment_size
    }

    /// The segment size if the buffer is more than one datagram of it.
    pub(super) fn segmented(&self) -> Option<usize> {
        self.segment_size.filter(|&s| self.buf.len() > s)
    }
}

/// A buffer for [`UdpSocket::recv_many`](super::UdpSocket::recv_many) to receive one entry
/// into, and what it received: how many bytes, from where, and (with GRO) the size of the
/// datagrams they are made of.
///
/// With [`UdpSocket::set_gro`](super::UdpSocket::set_gro) on, the kernel may coalesce several
/// datagrams from one sender, all of one size but the last, into one entry; its
/// [`segment_size`](InDatagram::segment_size) then says where to cut, and
/// [`segments`](InDatagram::segments) does the cutting. Give such a socket buffers of 64 KiB,
/// or a coalesced entry is cut short ([`truncated`](InDatagram::truncated)).
///
/// An entry keeps its buffer between calls: make a batch once and receive into it again and
/// again. Only the entries `recv_many` reports filled have meaningful results.
///
/// An entry may also receive into a `Vec`'s spare capacity
/// ([`appending`](InDatagram::appending)): nothing is zeroed or copied, and the `Vec` can be
/// handed on as it is (to a `BytesMut`, say) with what it received.
#[derive(Debug)]
pub struct InDatagram<'a> {
    pub(super) buf: Target<'a>,
    pub(super) len: usize,
    pub(super) addr: Option<SocketAddr>,
    pub(super) segment_size: Option<usize>,
    pub(super) truncated: bool,
}

/// Where an [`InDatagram`] receives.
#[derive(Debug)]
pub(super) enum Target<'a> {
    /// Into this slice, from its start.
    Slice(&'a mut [u8]),
    /// Onto the end of this `Vec`, into its spare capacity (the receive extends its length).
    Vec(&'a mut Vec<u8>),
}

impl<'a> InDatagram<'a> {
    /// An entry that receives into `buf`.
    pub fn new(buf: &'a mut [u8]) -> InDatagram<'a> {
        InDatagram::with(Target::Slice(buf))
    }

    /// An entry that appends what it receives to `vec`, into the capacity it has spare
    /// (`vec.capacity() - vec.len()` bytes at most: reserve room first). The spare memory is
    /// neither zeroed nor copied: the kernel writes the datagram in place, and `vec`'s length
    /// grows by what it received.
    ///
    /// ```
    /// # use fibra::net::{InDatagram, OutDatagram, UdpSocket};
    /// let a = UdpSocket::bind("127.0.0.1:0")?;
    /// let b = UdpSocket::bind("127.0.0.1:0")?;
    /// a.send_to(b"hello", b.local_addr()?)?;
    /// let mut vec = Vec::with_capacity(2048);
    /// let mut batch = [InDatagram::appending(&mut vec)];
    /// b.recv_many(&mut batch)?;
    /// assert_eq!(batch[0].data(), b"hello");
    /// drop(batch);
    /// assert_eq!(vec, b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn appending(vec: &'a mut Vec<u8>) -> InDatagram<'a> {
        InDatagram::with(Target::Vec(vec))
    }

    fn with(buf: Target<'a>) -> InDatagram<'a> {
        InDatagram {
            buf,
            len: 0,
            addr: None,
            segment_size: None,
            truncated: false,
        }
    }

    /// The bytes received (all segments, with GRO).
    pub fn data(&self) -> &[u8] {
        match &self.buf {
            Target::Slice(s) => &s[..self.len],
            // The receive appended them.
            Target::Vec(v) => &v[v.len() - self.len..],
        }
    }

    /// How many bytes were received.
    pub fn received(&self) -> usize {
        self.len
    }

    /// The sender's address (`None` before anything was received).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// With GRO, the size of each datagram coalesced into this entry (the last may be
    /// shorter); `None` for a single datagram.
    pub fn segment_size(&self) -> Option<usize> {
        self.segment_size
    }

    /// The datagrams received, one slice each: the data cut at the GRO segment size, or the
    /// whole data as one datagram (an empty one included).
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let data = self.data();
        let size = self.segment_size.unwrap_or(data.len()).max(1);
        // `chunks` gives nothing for no bytes, but an empty datagram is still one.
        let empty = data.is_empty().then_some(data);
        data.chunks(size).chain(empty)
    }

    /// Whether the buffer was too small and the rest of the datagram (or of the coalesced
    /// datagrams) was dropped.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

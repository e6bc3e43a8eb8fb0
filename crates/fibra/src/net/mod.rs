//! Networking with `std::net`'s shape: [`TcpListener`], [`TcpStream`], [`UdpSocket`],
//! [`UnixListener`], [`UnixStream`]; [`Pollable`], any other non-blocking descriptor a fiber
//! can wait on; and [`RedialBackoff`], for clients that dial a peer which may be down.
//!
//! [`UdpSocket`] also moves datagrams in batches, [`OutDatagram`]s with
//! [`UdpSocket::send_many`] (`sendmmsg`) and [`InDatagram`]s with [`UdpSocket::recv_many`]
//! (`recvmmsg`), with UDP segmentation (GSO) and receive coalescing (GRO) where the kernel has
//! them: the I/O a QUIC endpoint needs.
//!
//! Sockets are non-blocking underneath. Inside a fiber, an operation that would block parks
//! the fiber until the worker's driver reports readiness (or its timeout passes); on a plain
//! thread the same types block the thread, so they can be used from tests and set-up code too.

/// `Read`/`Write` for an owned stream type, delegating to the impls for `&Type` (where the
/// work is done, so a shared `&stream` can read in one fiber and write in another).
macro_rules! io_by_ref {
    ($ty:ty) => {
        impl std::io::Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                (&*self).read(buf)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                (&*self).read_vectored(bufs)
            }
        }

        impl std::io::Write for $ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                (&*self).write(buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                (&*self).write_vectored(bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
    };
}
use io_by_ref;

mod evented;
mod pollable;
mod redial;
mod sys;
mod tcp;
mod udp;
mod unix;

pub use pollable::Pollable;
pub use redial::RedialBackoff;
pub use tcp::{ListenOptions, TcpListener, TcpStream};
pub use udp::{BpfInstruction, InDatagram, OutDatagram, UdpSocket, QUIC_BUFFER_SIZE};
pub use unix::{UnixListener, UnixStream};

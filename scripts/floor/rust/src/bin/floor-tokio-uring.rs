//! Kernel-floor responder on tokio-uring: tokio's single-threaded scheduler
//! with reads and writes as io_uring operations (owned buffers), submitted
//! together when the scheduler parks.
use tokio_uring::net::{TcpListener, TcpStream};

async fn serve(s: TcpStream) {
    let (mut input, mut out, mut read) = (Vec::new(), Vec::new(), vec![0u8; 16384]);
    loop {
        let (r, buf) = s.read(read).await;
        read = buf;
        let n = match r {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        input.extend_from_slice(&read[..n]);
        floor::process(&mut input, &mut out);
        if !out.is_empty() {
            let (r, buf) = s.write_all(out).await;
            out = buf;
            if r.is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn main() {
    let port = floor::port();
    tokio_uring::start(async move {
        let l = TcpListener::bind(([127, 0, 0, 1], port).into()).unwrap();
        loop {
            let (s, _) = l.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            tokio_uring::spawn(serve(s));
        }
    });
}

//! Kernel-floor responder on tokio's single-threaded scheduler (epoll), the
//! runtime tiercache's server runs on when confined to one core.
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn serve(mut s: tokio::net::TcpStream) {
    let (mut input, mut out, mut read) = (Vec::new(), Vec::new(), vec![0u8; 16384]);
    loop {
        let n = match s.read(&mut read).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        input.extend_from_slice(&read[..n]);
        floor::process(&mut input, &mut out);
        if !out.is_empty() {
            if s.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn main() {
    let port = floor::port();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        loop {
            let (s, _) = l.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            tokio::spawn(serve(s));
        }
    });
}

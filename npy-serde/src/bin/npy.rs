//! The `npy` command-line tool (filled in by the CLI issue).
fn main() {
    eprintln!("npy: not built yet");
    std::process::exit(2);
}

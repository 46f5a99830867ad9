//! `outcore` — the command line of the out-of-core graph system (see the
//! `outcore_cli` library for the commands; this binary only starts them).

fn main() {
    outcore_cli::main()
}

//! The ground floor of every command: a [`Failure`] (the message, naming the file, and the exit
//! status) and the [`CliResult`] commands return.

use std::fmt;
use std::io;

/// A failure of a command: the message (naming the file) and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// 1 for bad input or an impossible operation, 2 for usage errors.
    pub code: u8,
    /// What went wrong; empty for a quiet exit (stdout closed by the reader).
    pub msg: String,
}

impl Failure {
    /// Bad input (exit status 1).
    pub fn input(msg: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            msg: msg.into(),
        }
    }

    /// A usage error found after argument parsing (exit status 2).
    pub fn usage(msg: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            msg: msg.into(),
        }
    }

    /// An error about `file`. An error that names its URL already (an object store's,
    /// `URL: message`, for a `file` that is that URL or a member of it) is not prefixed twice.
    pub fn file(file: &str, err: impl fmt::Display) -> Failure {
        // The library names its own option; the tool's is a flag.
        let text = err.to_string().replace(
            "with ReaderBuilder::allow_pickle_data(true)",
            "with --allow-pickle-data (npy cat, convert, sql)",
        );
        let named = text
            .split_once(": ")
            .is_some_and(|(head, _)| head.contains("://") && file.starts_with(head));
        if named {
            return Failure::input(text);
        }
        Failure::input(format!("{file}: {text}"))
    }

    /// An error writing the output: a closed stdout pipe (`npy cat x.npy | head`) ends the
    /// program quietly and successfully.
    pub fn write(what: &str, err: io::Error) -> Failure {
        if err.kind() == io::ErrorKind::BrokenPipe {
            Failure {
                code: 0,
                msg: String::new(),
            }
        } else {
            Failure::input(format!("cannot write {what}: {err}"))
        }
    }
}

/// The result type of the commands.
pub type CliResult<T = ()> = std::result::Result<T, Failure>;

use npy_serde::NpyRecord;
use serde::{Deserialize, Serialize};

// serde reads and writes `w` as "w_json"; the dtype would call it "w": reading by name
// could never find it.
#[derive(Serialize, Deserialize, NpyRecord)]
struct Conflict {
    #[serde(rename = "w_json")]
    #[npy(rename = "w")]
    w: f64,
}

// The same name both ways is fine (and #[npy(rename)] then says nothing more).
#[derive(Serialize, Deserialize, NpyRecord)]
struct Same {
    #[serde(rename = "w")]
    #[npy(rename = "w")]
    x: f64,
}

fn main() {}

#![no_std]

#[cfg(test)]
extern crate std;

pub mod psnr;

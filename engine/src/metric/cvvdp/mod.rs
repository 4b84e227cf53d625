//! ColorVideoVDP (issue 47), being built: not a metric of the registry yet. What exists is
//! checked against ColorVideoVDP 0.5.7 (tests/data/cvvdp/values.json, made by
//! scripts/cvvdp-reference.sh): the display models and their colour path ([`display`]), the temporal
//! filters ([`temporal`]), the contrast sensitivity ([`csf`]), the decimated Laplacian pyramid
//! ([`pyramid`]), the masking of a band ([`masking`]), the pooling to JOD ([`pool`]) and
//! the reading of Y'CbCr frames ([`yuv`]).
//!
//! The reference's data files used here are copied unchanged from its `vvdp_data/`, with
//! its licence (LICENSE-ColorVideoVDP in this folder).

pub mod csf;
pub mod display;
pub mod masking;
pub mod model;
pub mod pool;
pub mod pyramid;
pub mod temporal;
pub mod yuv;

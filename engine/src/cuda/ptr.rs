//! Typed device addresses: what the generated launchers take for `*const T` / `*mut T`
//! kernel parameters. They are plain addresses (creating one is safe); validity is the
//! contract of the `unsafe` launch.

use std::fmt;
use std::marker::PhantomData;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop, sys::CUdeviceptr};

/// Device address of `T`s the kernel reads (`*const T` in the kernel).
#[repr(transparent)]
pub struct DevPtr<T> {
    raw: CUdeviceptr,
    _t: PhantomData<fn() -> T>,
}

/// Device address of `T`s the kernel writes (`*mut T` in the kernel).
#[repr(transparent)]
pub struct DevPtrMut<T> {
    raw: CUdeviceptr,
    _t: PhantomData<fn() -> T>,
}

macro_rules! common {
    ($ty:ident) => {
        impl<T> $ty<T> {
            /// Wraps a raw device address.
            pub const fn from_raw(raw: CUdeviceptr) -> Self {
                Self {
                    raw,
                    _t: PhantomData,
                }
            }

            /// The null address.
            pub const fn null() -> Self {
                Self::from_raw(0)
            }

            /// The raw device address.
            pub const fn as_raw(self) -> CUdeviceptr {
                self.raw
            }

            /// The address `count` elements further (wrapping, like `wrapping_add`).
            pub const fn wrapping_add(self, count: usize) -> Self {
                Self::from_raw(self.raw.wrapping_add((count * size_of::<T>()) as u64))
            }

            /// The same address as another element type.
            pub const fn cast<U>(self) -> $ty<U> {
                $ty::from_raw(self.raw)
            }
        }

        impl<T> Clone for $ty<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T> Copy for $ty<T> {}

        impl<T> PartialEq for $ty<T> {
            fn eq(&self, other: &Self) -> bool {
                self.raw == other.raw
            }
        }

        impl<T> Eq for $ty<T> {}

        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "{}<{}>({:#x})",
                    stringify!($ty),
                    std::any::type_name::<T>(),
                    self.raw
                )
            }
        }
    };
}

common!(DevPtr);
common!(DevPtrMut);

impl<T> DevPtr<T> {
    /// The address of a cudarc buffer for reading on `stream`. Keep the returned guard
    /// alive until the launch is queued: dropping it records cudarc's read event so that
    /// later writes on other streams wait for the kernel.
    pub fn of<'a>(buf: &'a impl DevicePtr<T>, stream: &'a CudaStream) -> (Self, SyncOnDrop<'a>) {
        let (raw, guard) = buf.device_ptr(stream);
        (Self::from_raw(raw), guard)
    }
}

impl<T> DevPtrMut<T> {
    /// The address of a cudarc buffer for writing on `stream`; keep the guard alive until
    /// the launch is queued (see [`DevPtr::of`]).
    pub fn of<'a>(
        buf: &'a mut impl DevicePtrMut<T>,
        stream: &'a CudaStream,
    ) -> (Self, SyncOnDrop<'a>) {
        let (raw, guard) = buf.device_ptr_mut(stream);
        (Self::from_raw(raw), guard)
    }

    /// The same address, read-only.
    pub const fn as_const(self) -> DevPtr<T> {
        DevPtr::from_raw(self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_addresses() {
        let p = DevPtrMut::<u32>::from_raw(0x1000);
        assert_eq!(p.wrapping_add(3).as_raw(), 0x100c);
        assert_eq!(p.as_const().cast::<u64>().wrapping_add(1).as_raw(), 0x1008);
        assert_eq!(DevPtr::<f32>::null().as_raw(), 0);
        assert_eq!(std::mem::size_of::<DevPtr<u8>>(), 8);
    }
}

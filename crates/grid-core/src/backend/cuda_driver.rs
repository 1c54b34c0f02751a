//! The CUDA driver, asked directly through `libcuda` (loaded at run time, so a
//! build needs no CUDA): is there a device, and which GPU and driver is it.
//! Shared by the GPU backends.

/// Whether device `index` exists, asked before a backend touches it: burn-cuda
/// panics in a worker thread and LibTorch in the caller when libcuda is missing,
/// which would reach the user as a crash instead of a sentence.
pub fn available(index: usize) -> Result<(), String> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuDeviceGetCount = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: loading the CUDA driver runs no initialisers beyond the driver's own.
    let library =
        unsafe { libloading::Library::new("libcuda.so.1").or_else(|_| libloading::Library::new("libcuda.so")) }
            .map_err(|e| {
                format!(
                    "--device cuda:{index}: no CUDA driver found (libcuda.so.1: {e}); is an NVIDIA driver installed?"
                )
            })?;
    // SAFETY: the symbols have these C signatures in every CUDA driver API version.
    let count = unsafe {
        let init: libloading::Symbol<CuInit> = library.get(b"cuInit\0").map_err(|e| e.to_string())?;
        let get_count: libloading::Symbol<CuDeviceGetCount> =
            library.get(b"cuDeviceGetCount\0").map_err(|e| e.to_string())?;
        let status = init(0);
        if status != 0 {
            return Err(format!("--device cuda:{index}: the CUDA driver failed to initialise (CUresult {status})"));
        }
        let mut count = 0i32;
        let status = get_count(&mut count);
        if status != 0 {
            return Err(format!("--device cuda:{index}: cannot count CUDA devices (CUresult {status})"));
        }
        count
    };
    if index >= count.max(0) as usize {
        return Err(format!("--device cuda:{index}: this machine has {count} CUDA device(s)"));
    }
    Ok(())
}

/// The GPU's model and the driver's version, e.g. `NVIDIA H100 80GB HBM3 cuda-13000`:
/// compiled kernels are valid for that pair, so it names their cache folder.
pub fn device_tag(index: usize) -> Result<String, String> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuDeviceGet = unsafe extern "C" fn(*mut i32, i32) -> i32;
    type CuDeviceGetName = unsafe extern "C" fn(*mut std::ffi::c_char, i32, i32) -> i32;
    type CuDriverGetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: as in `available`; the symbols have these C signatures in
    // every CUDA driver API version, and the name buffer outlives the call.
    unsafe {
        let library = libloading::Library::new("libcuda.so.1")
            .or_else(|_| libloading::Library::new("libcuda.so"))
            .map_err(|e| e.to_string())?;
        let init: libloading::Symbol<CuInit> = library.get(b"cuInit\0").map_err(|e| e.to_string())?;
        let get: libloading::Symbol<CuDeviceGet> = library.get(b"cuDeviceGet\0").map_err(|e| e.to_string())?;
        let name: libloading::Symbol<CuDeviceGetName> = library.get(b"cuDeviceGetName\0").map_err(|e| e.to_string())?;
        let version: libloading::Symbol<CuDriverGetVersion> =
            library.get(b"cuDriverGetVersion\0").map_err(|e| e.to_string())?;
        if init(0) != 0 {
            return Err("the CUDA driver failed to initialise".into());
        }
        let mut device = 0i32;
        if get(&mut device, index as i32) != 0 {
            return Err(format!("no CUDA device {index}"));
        }
        let mut buffer = [0 as std::ffi::c_char; 256];
        if name(buffer.as_mut_ptr(), buffer.len() as i32, device) != 0 {
            return Err(format!("cannot read the name of CUDA device {index}"));
        }
        let mut driver = 0i32;
        if version(&mut driver) != 0 {
            return Err("cannot read the CUDA driver's version".into());
        }
        let model = std::ffi::CStr::from_ptr(buffer.as_ptr()).to_string_lossy().into_owned();
        Ok(format!("{model} cuda-{driver}"))
    }
}

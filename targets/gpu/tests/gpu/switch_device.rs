//! The generic-free API: the same program runs one model on the CPU and on Vulkan, and the only thing
//! that changes is a `Device` value. Skips the Vulkan half (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use ember_core::AlignedBuf;
use ember_gpu::{Device, DeviceMemoryReport, DeviceSession, Error, TimingSource};
use ember_tests::{convert_model, model_dir, read_npy_f32};

/// Classifies one digit on `device`: nothing here depends on which device it is.
fn classify(blob: &[u8], pixels: &[f32], device: Device) -> Result<(usize, Vec<f32>), Error> {
    let mut session = DeviceSession::new(blob, device)?;
    session.input(0)?.write_f32(pixels)?;
    session.run()?;
    let scores = session.output(0)?.into_vec();
    let best = (0..scores.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap_or(0);
    Ok((best, scores))
}

#[test]
fn one_value_switches_the_device() {
    let blob = AlignedBuf::from_bytes(&convert_model("digits", &[("input", &[1, 1, 8, 8])]));
    let (_, pixels) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    let (cpu_class, cpu_scores) = classify(blob.as_bytes(), &pixels, Device::Cpu).unwrap();
    let Some(gpu) = common::vulkan() else { return };
    let (gpu_class, gpu_scores) = classify(blob.as_bytes(), &pixels, gpu).unwrap();
    assert_eq!(gpu_class, cpu_class);
    common::assert_close("digits", &gpu_scores, &cpu_scores);
}

#[test]
fn profile_and_memory_report_on_each_device() {
    let blob = AlignedBuf::from_bytes(&convert_model("digits", &[("input", &[1, 1, 8, 8])]));
    let (_, pixels) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    let mut devices = vec![Device::Cpu];
    devices.extend(common::vulkan());
    for device in devices {
        let mut session = DeviceSession::new(blob.as_bytes(), device).unwrap();
        session.input(0).unwrap().write_f32(&pixels).unwrap();
        let profile = session.run_profiled().unwrap();
        assert_eq!(
            profile.ops.len(),
            ember_core::Model::parse(blob.as_bytes())
                .unwrap()
                .op_count()
        );
        match (device, session.memory_report()) {
            (Device::Cpu, DeviceMemoryReport::Cpu(r)) => {
                assert_eq!(profile.source, TimingSource::HostClock);
                assert!(r.peak_bytes > 0);
            }
            (Device::Vulkan(_), DeviceMemoryReport::Gpu(r)) => {
                assert!(r.bytes_in_use > 0 && r.allocations > 0, "{r}");
                assert!(r.weights_bytes > 0, "{r}");
                // Tensors share the planned activation buffer (digits: 2,816 B against 4,304 B).
                assert!(r.activation_bytes < r.activation_tensor_bytes, "{r}");
            }
            (d, r) => panic!("{d}: unexpected report {r:?}"),
        }
    }
}

#[test]
fn unavailable_devices_are_errors_that_list_what_is_available() {
    let blob = AlignedBuf::from_bytes(&convert_model("digits", &[("input", &[1, 1, 8, 8])]));
    for device in [Device::Cuda(0), Device::Vulkan(99)] {
        let err = DeviceSession::new(blob.as_bytes(), device)
            .err()
            .unwrap_or_else(|| panic!("{device} should not open here"));
        let message = err.to_string();
        assert!(message.contains("available devices: cpu"), "{message}");
    }
    #[cfg(not(target_vendor = "apple"))]
    assert!(DeviceSession::new(blob.as_bytes(), Device::Metal).is_err());
    let err = "tpu".parse::<Device>().unwrap_err().to_string();
    assert!(err.contains("available devices"), "{err}");
}

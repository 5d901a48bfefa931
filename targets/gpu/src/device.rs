//! Devices as values: `Device::Cpu`, `Device::Vulkan(i)`, `Device::Metal`, `Device::Cuda(i)` and
//! `Device::best()`, and the Vulkan listing (through `ash`) that `ember devices` prints and that maps
//! `Vulkan(i)` onto a CubeCL device.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use ash::vk;

use crate::Error;

/// Where a [`DeviceSession`](crate::DeviceSession) runs. A plain value: changing it changes the device,
/// nothing is recompiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The host CPU, through `ember_core::Session` and `ember_cpu`'s kernels for this CPU.
    Cpu,
    /// The Vulkan physical device with this index, in the order `ember devices` lists them (lavapipe, a
    /// CPU implementation, included).
    Vulkan(usize),
    /// The default Metal device (Apple only).
    Metal,
    /// The CUDA device with this index (needs a build with CUDA support).
    Cuda(usize),
}

impl Device {
    /// The best device here: the first hardware Vulkan GPU (discrete, then integrated, then virtual),
    /// else Metal on Apple devices, else the CPU. A software Vulkan device (lavapipe) is never "best":
    /// Ember's CPU kernels beat it.
    pub fn best() -> Device {
        let devices = vulkan_devices();
        for wanted in [
            vk::PhysicalDeviceType::DISCRETE_GPU,
            vk::PhysicalDeviceType::INTEGRATED_GPU,
            vk::PhysicalDeviceType::VIRTUAL_GPU,
        ] {
            if let Some(d) = devices.iter().find(|d| d.kind == wanted) {
                return Device::Vulkan(d.index);
            }
        }
        if cfg!(target_vendor = "apple") {
            return Device::Metal;
        }
        Device::Cpu
    }

    /// Every device this build can use on this machine, CPU first.
    pub fn available() -> Vec<Device> {
        let mut out = vec![Device::Cpu];
        out.extend(vulkan_devices().iter().map(|d| Device::Vulkan(d.index)));
        if cfg!(target_vendor = "apple") {
            out.push(Device::Metal);
        }
        out
    }

    /// [`Device::available`] as one line for error messages: `cpu, vulkan:0 (llvmpipe ..., cpu)`.
    pub fn available_list() -> String {
        let vulkan = vulkan_devices();
        Device::available()
            .iter()
            .map(|d| match d {
                Device::Vulkan(i) => match vulkan.get(*i) {
                    Some(info) => format!("{d} ({}, {})", info.name, info.kind_name()),
                    None => d.to_string(),
                },
                _ => d.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// True for the devices that run CubeCL kernels.
    pub fn is_gpu(&self) -> bool {
        !matches!(self, Device::Cpu)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Vulkan(i) => write!(f, "vulkan:{i}"),
            Device::Metal => write!(f, "metal"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    /// `cpu`, `vulkan` (index 0), `vulkan:N`, `metal`, `cuda`, `cuda:N`, or `best`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let (name, index) = match s.split_once(':') {
            Some((name, index)) => (name, Some(index)),
            None => (s, None),
        };
        let index = match index.map(str::parse::<usize>) {
            None => Ok(0),
            Some(Ok(i)) => Ok(i),
            Some(Err(_)) => Err(()),
        };
        match (name.to_ascii_lowercase().as_str(), index) {
            ("cpu", Ok(0)) => Ok(Device::Cpu),
            ("vulkan", Ok(i)) => Ok(Device::Vulkan(i)),
            ("metal", Ok(0)) => Ok(Device::Metal),
            ("cuda", Ok(i)) => Ok(Device::Cuda(i)),
            ("best", Ok(0)) => Ok(Device::best()),
            _ => Err(Error::DeviceUnavailable {
                requested: s.to_string(),
                reason: "not a device name (cpu, vulkan[:N], metal, cuda[:N], best)".into(),
                available: Device::available_list(),
            }),
        }
    }
}

/// One Vulkan physical device, as the loader reports it.
#[derive(Clone, Debug)]
pub struct VulkanDeviceInfo {
    /// Index in the loader's order (the `N` of `Device::Vulkan(N)`).
    pub index: usize,
    /// Device name (`NVIDIA GeForce ...`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub name: String,
    /// Physical device type.
    pub kind: vk::PhysicalDeviceType,
    /// Vulkan API version the device supports, as `major.minor.patch`.
    pub api_version: String,
    /// Memory heaps.
    pub heaps: Vec<VulkanHeap>,
}

/// One memory heap of a Vulkan device.
#[derive(Clone, Copy, Debug)]
pub struct VulkanHeap {
    /// Size in bytes.
    pub bytes: u64,
    /// True for device-local memory (VRAM on a discrete GPU).
    pub device_local: bool,
}

impl VulkanDeviceInfo {
    /// `discrete GPU`, `integrated GPU`, `virtual GPU`, `cpu` or `other`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            vk::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
            vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
            vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
            vk::PhysicalDeviceType::CPU => "cpu",
            _ => "other",
        }
    }

    /// The CubeCL (wgpu) device kind that selects this device: wgpu numbers devices per type.
    pub(crate) fn wgpu_kind(&self) -> cubecl::device::WgpuDeviceKind {
        use cubecl::device::WgpuDeviceKind as K;
        let rank = vulkan_devices()
            .iter()
            .filter(|d| d.kind == self.kind && d.index < self.index)
            .count();
        match self.kind {
            vk::PhysicalDeviceType::DISCRETE_GPU => K::DiscreteGpu(rank),
            vk::PhysicalDeviceType::INTEGRATED_GPU => K::IntegratedGpu(rank),
            vk::PhysicalDeviceType::VIRTUAL_GPU => K::VirtualGpu(rank),
            _ => K::Cpu,
        }
    }
}

/// The Vulkan devices on this machine (empty when there is no Vulkan loader or no device). Read once
/// per process.
pub fn vulkan_devices() -> &'static [VulkanDeviceInfo] {
    static DEVICES: OnceLock<Vec<VulkanDeviceInfo>> = OnceLock::new();
    DEVICES.get_or_init(|| list_vulkan().unwrap_or_default())
}

fn list_vulkan() -> Option<Vec<VulkanDeviceInfo>> {
    // SAFETY: loading the Vulkan loader library runs its initialisers; the loader is a system library
    // meant to be loaded this way, and the `Entry` keeps it loaded while we use it.
    let entry = unsafe { ash::Entry::load() }.ok()?;
    let app = vk::ApplicationInfo::default().api_version(vk::make_api_version(0, 1, 1, 0));
    let create = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: `create` and `app` are valid for the call; no layers or extensions are requested.
    let instance = unsafe { entry.create_instance(&create, None) }.ok()?;
    // SAFETY: `instance` is a live instance created above.
    let physical = unsafe { instance.enumerate_physical_devices() }.unwrap_or_default();
    let mut out = Vec::with_capacity(physical.len());
    for (index, &device) in physical.iter().enumerate() {
        // SAFETY: `device` was just enumerated from the live `instance`.
        let props = unsafe { instance.get_physical_device_properties(device) };
        // SAFETY: as above.
        let memory = unsafe { instance.get_physical_device_memory_properties(device) };
        let name = props
            .device_name_as_c_str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "(unnamed)".into());
        let v = props.api_version;
        out.push(VulkanDeviceInfo {
            index,
            name,
            kind: props.device_type,
            api_version: format!(
                "{}.{}.{}",
                vk::api_version_major(v),
                vk::api_version_minor(v),
                vk::api_version_patch(v)
            ),
            heaps: memory
                .memory_heaps_as_slice()
                .iter()
                .map(|h| VulkanHeap {
                    bytes: h.size,
                    device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
                })
                .collect(),
        });
    }
    // SAFETY: nothing created from `instance` outlives this call (physical devices need no destroy).
    unsafe { instance.destroy_instance(None) };
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::Device;

    #[test]
    fn names_parse_and_print_back() {
        for (text, device) in [
            ("cpu", Device::Cpu),
            ("vulkan", Device::Vulkan(0)),
            ("Vulkan:2", Device::Vulkan(2)),
            ("metal", Device::Metal),
            ("cuda:1", Device::Cuda(1)),
        ] {
            assert_eq!(text.parse::<Device>().unwrap(), device);
            assert_eq!(device.to_string().parse::<Device>().unwrap(), device);
        }
        for bad in ["tpu", "vulkan:x", "cpu:1", ""] {
            assert!(bad.parse::<Device>().is_err(), "{bad}");
        }
    }
}

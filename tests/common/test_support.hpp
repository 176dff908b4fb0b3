#pragma once
// Helpers shared by the test suites: the real-data folder and per-device instantiation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "s3d/core/device.hpp"

namespace s3d::test {

/// The shared real-data folder (`../shared/data`, or $S3D_DATA_DIR).
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("S3D_DATA_DIR")) return env;
#ifdef S3D_TEST_DATA_DIR
  return S3D_TEST_DATA_DIR;
#else
  return "../shared/data";
#endif
}

/// True in an AddressSanitizer build, where each pixel costs 10-20x more: tests that sweep large synthetic
/// images take smaller ones there (odd sizes still).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// True under CI=true: missing real data is then a failure, not a skip.
inline bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

/// Path of `relative` inside the data folder; skips the test (fails under CI) when absent.
#define S3D_REQUIRE_DATA(var, relative)                                                \
  const std::filesystem::path var = ::s3d::test::data_dir() / (relative);              \
  if (!std::filesystem::exists(var)) {                                                 \
    if (::s3d::test::running_in_ci()) FAIL() << "real data missing under CI: " << var; \
    GTEST_SKIP() << "real data not found: " << var << " (set S3D_DATA_DIR)";           \
  }

/// Devices a per-device test runs on: always the CPU, and `cuda:0` whenever CUDA is built (skipped
/// at run time without a GPU, so CI shows the case as skipped rather than missing).
inline std::vector<Device> test_devices() {
  std::vector<Device> devices{Device(Device::Kind::kCpu)};
  if (cuda_built()) devices.emplace_back(Device::Kind::kCuda, 0);
  return devices;
}

/// Call at the top of a per-device test body.
#define S3D_SKIP_IF_NO_DEVICE(device) \
  if ((device).is_cuda() && ::s3d::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

/// Call at the top of a per-device test body whose only check compares the device's result with the CPU
/// backend's: on the CPU row that compares the oracle with itself, so the row is skipped with the reason
/// rather than counted as a pass that could never fail.
#define S3D_SKIP_CPU_VS_CPU(device) \
  if ((device).is_cpu()) GTEST_SKIP() << "the CPU backend is the oracle: comparing it with itself cannot fail"

inline std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" : "cpu";
}

/// Sets S3D_CPU_ISA (nullptr: unset) while the object lives, so that a test runs the CPU loops' baseline x86-64
/// variants (s3d/core/cpu_dispatch.hpp) beside the AVX2 ones.
class ScopedCpuIsa {
 public:
  explicit ScopedCpuIsa(const char* isa) {
    if (const char* old = std::getenv("S3D_CPU_ISA")) old_ = old, had_ = true;
    set(isa);
  }
  ~ScopedCpuIsa() { set(had_ ? old_.c_str() : nullptr); }
  ScopedCpuIsa(const ScopedCpuIsa&) = delete;
  ScopedCpuIsa& operator=(const ScopedCpuIsa&) = delete;

 private:
  static void set(const char* isa) {
    if (isa)
      setenv("S3D_CPU_ISA", isa, 1);
    else
      unsetenv("S3D_CPU_ISA");
  }
  std::string old_;
  bool had_ = false;
};

/// A fixture with a fresh folder of its own under the system's temporary folder (named after the process and the
/// test), removed after the test.
class TempFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("s3d_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace s3d::test

#include "versions.hpp"

#if __has_include(<opencv2/core/version.hpp>)
#include <opencv2/core/version.hpp>
#endif
#if __has_include(<pcl/pcl_config.h>)
#include <pcl/pcl_config.h>
#endif

namespace s3d::cli::detail {

std::string opencv_version() {
#ifdef CV_VERSION
  return CV_VERSION;
#else
  return "unknown";
#endif
}

std::string pcl_version() {
#ifdef PCL_VERSION_PRETTY
  return PCL_VERSION_PRETTY;
#else
  return "unknown";
#endif
}

}  // namespace s3d::cli::detail

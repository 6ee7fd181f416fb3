// Enums by name: each name maps to its value and back, a name not in the list is none (not the
// first value), a value past the list is "unknown", and the choices read as a sentence.
#include <gtest/gtest.h>

#include "core/enum_names.hpp"
#include "sample/snapshot.hpp"

using baton::ComputeMode;
using baton::enum_choices;
using baton::enum_from_name;
using baton::enum_name;
using baton::GpuProcessType;

TEST(EnumNames, EachNameIsItsValueBothWays) {
    for (ComputeMode m :
         {ComputeMode::shared, ComputeMode::exclusive_thread, ComputeMode::prohibited, ComputeMode::exclusive_process})
        EXPECT_EQ(enum_from_name<ComputeMode>(enum_name(m)), m) << enum_name(m);
    EXPECT_STREQ(enum_name(ComputeMode::shared), "default");  // (NVML's DEFAULT; `default` is a keyword)
    EXPECT_STREQ(enum_name(GpuProcessType::graphics), "graphics");
    EXPECT_EQ(enum_from_name<GpuProcessType>("compute"), GpuProcessType::compute);
}

TEST(EnumNames, UnknownNamesAndValuesAreNotGuessed) {
    EXPECT_EQ(enum_from_name<GpuProcessType>(""), std::nullopt);
    EXPECT_EQ(enum_from_name<GpuProcessType>("Compute"), std::nullopt);
    EXPECT_EQ(enum_from_name<GpuProcessType>("compute "), std::nullopt);
    EXPECT_EQ(enum_from_name<ComputeMode>("shared"), std::nullopt);
    EXPECT_STREQ(enum_name(static_cast<GpuProcessType>(7)), "unknown");
    EXPECT_EQ(enum_choices<GpuProcessType>(), "compute or graphics");
    EXPECT_EQ(enum_choices<ComputeMode>(), "default, exclusive_thread, prohibited or exclusive_process");
}

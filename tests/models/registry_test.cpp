// The registry (src/models/registry.cpp) against the fixture list (tests/fixtures/models.txt): every
// registered model type has exactly one fixture and every fixture's config.json names a registered type, so
// the tests that loop over the list cover every model type. And the state bytes a built model states
// (Model::state_bytes, summed from its blocks' cache_bytes) are the state spec's (load/state_spec.h, whose
// numbers tests/load/fixture_config_test checks against the state shapes transformers recorded).
#include "models/registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../fixtures/model_fixtures.h"
#include "load/state_spec.h"
#include "model_test_util.h"

namespace keel::testing {
namespace {

TEST(Registry, OneFixturePerModelType) {
  std::map<std::string, std::string> fixture_of;  // model_type → fixture folder
  for (const std::string& name : model_fixture_names()) {
    SCOPED_TRACE(name);
    const ModelConfig cfg = models::load_model_config(model_fixture_path(name));
    EXPECT_NO_THROW(models::find_model_factory(cfg.model_type));
    EXPECT_TRUE(fixture_of.emplace(cfg.model_type, name).second)
        << cfg.model_type << " has two fixtures: " << fixture_of[cfg.model_type] << " and " << name;
  }
  ASSERT_FALSE(models::model_registry().empty());
  for (const models::ModelEntry& e : models::model_registry())
    EXPECT_TRUE(fixture_of.count(std::string(e.model_type())))
        << "model type " << e.model_type() << " has no line in tests/fixtures/models.txt";
  EXPECT_EQ(fixture_of.size(), models::model_registry().size());
}

TEST(Registry, EntriesAreComplete) {
  std::set<std::string_view> types, names;
  for (const models::ModelEntry& e : models::model_registry()) {
    SCOPED_TRACE(std::string(e.model_type()));
    EXPECT_TRUE(types.insert(e.model_type()).second) << "registered twice";
    EXPECT_NE(e.make, nullptr);
    EXPECT_NE(e.config.read, nullptr);
    ASSERT_FALSE(e.config.config_names.empty());
    for (std::string_view n : e.config.config_names)
      EXPECT_TRUE(names.insert(n).second) << "config.json name " << n << " read by two entries";
  }
}

// Built from each fixture: state_bytes at several capacities equals the state spec's bytes_at_context.
TEST(StateBytes, ModelStatesTheStateSpecBytes) {
  for (const std::string& name : model_fixture_names()) {
    SCOPED_TRACE(name);
    const ModelConfig cfg = models::load_model_config(model_fixture_path(name));
    const StateSpec spec = compute_state_spec(cfg);
    ModelUnderTest m(model_fixture_path(name));
    for (int64_t capacity : {int64_t{1}, int64_t{7}, int64_t{300}}) {
      EXPECT_EQ(m.model().state_bytes(0, capacity), spec.bytes_at_context(capacity)) << capacity;
      // And what new_state takes from the pool.
      EXPECT_EQ(m.model().new_state(capacity)->bytes(), spec.bytes_at_context(capacity)) << capacity;
    }
  }
}

}  // namespace
}  // namespace keel::testing

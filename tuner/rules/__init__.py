"""The rule base: YAML rules (`rules/*.yaml`) loaded, validated and evaluated over facts."""

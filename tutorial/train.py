# tutorial/train.py
from pathlib import Path

import skops.io as sio
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairprobe.datasets import load_adult

features = ["age", "education-num", "race", "capital-gain", "hours-per-week"]
train = load_adult("train", names_seed=None)
model = make_pipeline(
    make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["race"]),
                            remainder=StandardScaler()),
    LogisticRegression(max_iter=1000),
).fit(train[features], train["income"])
out = Path("tutorial")
sio.dump(model, out / "model.skops")

test = load_adult("test", names_seed=None)
test[[*features, "sex", "income"]].to_csv(out / "pool.csv", index=False)
test.assign(y_pred=model.predict(test[features]))[["y_pred", "income", "sex", "race"]].rename(
    columns={"income": "y_true"}).to_csv(out / "preds.csv", index=False)

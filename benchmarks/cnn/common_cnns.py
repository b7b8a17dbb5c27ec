"""Common CNN architectures graphi was not tuned on, written the way their PyTorch reference
implementations are (scripts/bench_cnn.sh --models common; group "common" of cnn_models.py):
ResNet-18, MobileNetV2 (ReLU6), an EfficientNet-like MobileNetV2 with SiLU and
squeeze-excitation, a ShuffleNetV2-like stack (116-channel stage: chunk, depthwise branch,
concat, channel shuffle), a DenseNet-like pair of dense blocks and a small U-Net (ConvTranspose2d
up-sampling, skip concats). Inputs 224x224 (U-Net 128x128), batch-norm statistics set by
cnn_models.build."""
import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential() if stride == 1 and cin == cout else
                     nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout)))

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.down(x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, c = [], 64
        for cout, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                             (512, 1)]:
            layers.append(BasicBlock(c, cout, stride))
            c = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, se=False, act=nn.ReLU6):
        super().__init__()
        h = cin * expand
        self.residual = stride == 1 and cin == cout
        self.pw = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), act())
        self.dw = nn.Sequential(nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False),
                                nn.BatchNorm2d(h), act())
        self.se = (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(h, h // 4, 1), nn.SiLU(),
                                 nn.Conv2d(h // 4, h, 1), nn.Sigmoid()) if se else None)
        self.pl = nn.Sequential(nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.dw(self.pw(x))
        if self.se is not None:
            y = y * self.se(y)
        y = self.pl(y)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    def __init__(self, se=False, act=nn.ReLU6, classes=1000):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]
        layers, c = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), act()], 32
        for t, cout, n, stride in cfg:
            for i in range(n):
                layers.append(InvertedResidual(c, cout, stride if i == 0 else 1, t, se, act))
                c = cout
        layers += [nn.Conv2d(c, 1280, 1, bias=False), nn.BatchNorm2d(1280), act()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class ShuffleUnit(nn.Module):
    def __init__(self, c):
        super().__init__()
        b = c // 2
        self.branch = nn.Sequential(
            nn.Conv2d(b, b, 1, bias=False), nn.BatchNorm2d(b), nn.ReLU(),
            nn.Conv2d(b, b, 3, 1, 1, groups=b, bias=False), nn.BatchNorm2d(b),
            nn.Conv2d(b, b, 1, bias=False), nn.BatchNorm2d(b), nn.ReLU())

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = torch.cat([a, self.branch(b)], 1)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleNetV2Like(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 116, 3, 2, 1, bias=False), nn.BatchNorm2d(116),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.units = nn.Sequential(*[ShuffleUnit(116) for _ in range(6)])
        self.fc = nn.Linear(116, classes)

    def forward(self, x):
        return self.fc(self.units(self.stem(x)).mean((2, 3)))


class DenseBlock(nn.Module):
    def __init__(self, c, growth=32, layers=6):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(
            nn.BatchNorm2d(c + i * growth), nn.ReLU(),
            nn.Conv2d(c + i * growth, 4 * growth, 1, bias=False), nn.BatchNorm2d(4 * growth),
            nn.ReLU(), nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False)) for i in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return x


class DenseNetLike(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.d1 = DenseBlock(64)
        self.transition = nn.Sequential(nn.BatchNorm2d(256), nn.ReLU(),
                                        nn.Conv2d(256, 128, 1, bias=False), nn.AvgPool2d(2))
        self.d2 = DenseBlock(128)
        self.fc = nn.Linear(320, classes)

    def forward(self, x):
        y = self.d2(self.transition(self.d1(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class UNetLike(nn.Module):
    def __init__(self):
        super().__init__()

        def block(a, b):
            return nn.Sequential(nn.Conv2d(a, b, 3, 1, 1), nn.ReLU(), nn.Conv2d(b, b, 3, 1, 1),
                                 nn.ReLU())
        self.e1, self.e2, self.e3 = block(3, 16), block(16, 32), block(32, 64)
        self.u2 = nn.ConvTranspose2d(64, 32, 2, 2)
        self.d2 = block(64, 32)
        self.u1 = nn.ConvTranspose2d(32, 16, 2, 2)
        self.d1 = block(32, 16)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        d = self.d2(torch.cat([self.u2(c), b], 1))
        return self.out(self.d1(torch.cat([self.u1(d), a], 1)))


def models():
    """name -> (make module, per-sample input shape)."""
    return {
        "resnet18": (ResNet18, (3, 224, 224)),
        "mobilenet_v2": (MobileNetV2, (3, 224, 224)),
        "efficientnet_like": (lambda: MobileNetV2(True, nn.SiLU), (3, 224, 224)),
        "shufflenet_v2_like": (ShuffleNetV2Like, (3, 224, 224)),
        "densenet_like": (DenseNetLike, (3, 224, 224)),
        "unet_like": (UNetLike, (3, 128, 128)),
    }
